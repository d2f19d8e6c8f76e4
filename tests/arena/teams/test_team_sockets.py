"""A teammate follows a colleague's generation and battle over the WebSocket (read-only): the
stream comes, a stop frame of theirs gets an error and cancels nothing; the owner's stop cancels.
A member of another team is refused (4404)."""

import json

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.test import Client

from arena import streams
from arena.asgi import application
from arena.teams import membership
from arena.teams.models import Team
from inference import protocol as p
from tests.arena.factories import comparison, generation
from tests.arena.socket_client import WebsocketCommunicator

pytestmark = pytest.mark.django_db(transaction=True)


def cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[django_settings.SESSION_COOKIE_NAME].value


def socket(session: str, path: str) -> WebsocketCommunicator:
    headers = [(b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={session}".encode()),
               (b"origin", f"http://localhost:{django_settings.PORT}".encode()), (b"host", b"localhost")]
    return WebsocketCommunicator(application, path, headers=headers)


@pytest.fixture
def world(owner, outsider, catalogue):
    search, support = Team.objects.create(name="Search"), Team.objects.create(name="Support")
    colleague = get_user_model().objects.create_user("colleague", password="colleague-pass-1")
    for team, user in ((search, owner), (search, colleague), (support, outsider)):
        membership.add_member(team, user)
    gen = generation(owner, catalogue[0])
    gen.team = search
    gen.save(update_fields=["team"])
    battle = comparison(owner, catalogue[0], catalogue[3], texts=None)
    gens = [gen, battle.left, battle.right]
    for g in gens:
        streams.client().xadd(streams.keys().stream(str(g.id)), p.event(p.STARTED, prompt_tokens=3, queue_s=0.0))
    yield {"generation": gen, "battle": battle,
           "sessions": {"colleague": cookie(colleague), "owner": cookie(owner), "outsider": cookie(outsider)}}
    keys = streams.keys()
    for g in gens:
        streams.client().delete(keys.stream(str(g.id)), keys.cancel(str(g.id)), keys.viewers(str(g.id)))


def cancelled(gen) -> bytes | None:
    return streams.client().get(streams.keys().cancel(str(gen.id)))


@pytest.mark.parametrize("target", ["generation", "battle"])
async def test_a_teammate_follows_but_cannot_stop_and_the_owner_can(world, target):
    path = f"/ws/generations/{world['generation'].id}/?format=json" if target == "generation" else \
        f"/ws/battles/{world['battle'].id}/?format=json"
    gens = [world["generation"]] if target == "generation" else [world["battle"].left, world["battle"].right]
    comm = socket(world["sessions"]["colleague"], path)
    assert (await comm.connect())[0]
    await comm.receive_output()  # the snapshot: the stream is theirs to follow
    await comm.send_to(text_data=json.dumps({"action": "stop"}))
    # The error frame (JSON for a generation, the notice's HTML for a battle) after any stream frames.
    while "only its owner and staff stop it" not in (await comm.receive_output())["text"]:
        pass
    assert [cancelled(g) for g in gens] == [None] * len(gens)
    await comm.disconnect()
    comm = socket(world["sessions"]["owner"], path)
    assert (await comm.connect())[0]
    await comm.send_to(text_data=json.dumps({"action": "stop"}))
    await comm.receive_output()
    await comm.disconnect()
    assert [cancelled(g) for g in gens] == [b"user"] * len(gens)


async def test_a_member_of_another_team_is_refused(world):
    comm = socket(world["sessions"]["outsider"], f"/ws/battles/{world['battle'].id}/")
    connected, code = await comm.connect()
    assert not connected and code == 4404


async def test_a_teammates_snapshot_has_no_stop_button_and_the_owners_has(world):
    path = f"/ws/generations/{world['generation'].id}/"
    for who, stop_shown in (("colleague", False), ("owner", True)):
        comm = socket(world["sessions"][who], path)
        assert (await comm.connect())[0]
        snapshot = (await comm.receive_output())["text"]
        assert ('value="stop"' in snapshot) is stop_shown, (who, snapshot)
        await comm.disconnect()
