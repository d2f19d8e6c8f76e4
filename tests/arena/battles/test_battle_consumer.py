"""The battle WebSocket, against real Redis streams written as two workers write them."""

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from arena import streams
from arena.battles.models import Battle
from arena.battles.services import start_battle
from arena.routing import websocket_urlpatterns
from inference import protocol as p

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def make_battle(owner, catalogue, blind=False):
    sides = {s: {"model": catalogue[i], "params": {}} for s, i in (("left", 2), ("right", 3))}
    mode = Battle.Mode.TOURNAMENT if blind else Battle.Mode.COMPARISON
    return start_battle(owner, prompt="Hi", sides=sides, mode=mode, blind=blind)


def emit(gen, kind, **fields):
    streams.client().xadd(streams.keys().stream(str(gen.id)), p.event(kind, **fields))


async def connect(battle, user):
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/battles/{battle.id}/")
    comm.scope["user"] = user
    connected, code = await comm.connect()
    return comm, connected, code


async def receive_all(comm, timeout=1.0) -> str:
    """Every frame until none comes for `timeout` s (receive_nothing leaves the app running)."""
    frames = []
    while not await comm.receive_nothing(timeout=timeout):
        frames.append(await comm.receive_from())
    return "".join(frames)


def done(gen, text, rate):
    emit(gen, p.DONE, text=text, finish_reason="stop",
         metrics={"generated_tokens": 3, "decode_tokens_per_s": rate,
                  "first_token_time": gen.created_at.timestamp() + 1})


@pytest.fixture
def battle(owner, catalogue):
    return make_battle(owner, catalogue)


async def test_both_sides_stream_into_their_own_panes_then_the_vote_opens(battle, owner):
    emit(battle.left, p.STARTED, prompt_tokens=3)
    emit(battle.left, p.TOKEN, text="Blue", n=1)
    comm, connected, _ = await connect(battle, owner)
    assert connected
    snapshot = await receive_all(comm, 0.5)
    assert 'id="left-output"' in snapshot and "Blue" in snapshot and 'id="right-status"' in snapshot
    emit(battle.right, p.STARTED, prompt_tokens=3)
    emit(battle.right, p.TOKEN, text=" <i>Red</i>", n=1)
    emit(battle.left, p.TOKEN, text=" sky", n=2)
    live = await receive_all(comm, 0.5)
    assert 'id="right-output" hx-swap-oob="beforeend"' in live and "&lt;i&gt;Red&lt;/i&gt;" in live
    assert "<i>" not in live and " sky" in live
    done(battle.left, "Blue sky", 12.5)
    done(battle.right, "Red", 30.0)
    final = await receive_all(comm, 1.0)
    assert "12.5" in final and "30.0" in final and "<svg" in final
    assert 'id="vote-buttons"' in final and "disabled" not in final.split('id="vote-buttons"')[1]
    await comm.disconnect()


async def test_a_blind_battle_sends_no_speeds_names_or_failure_details(owner, catalogue):
    battle = await database(make_battle, owner, catalogue, blind=True)
    emit(battle.left, p.LOADING, elapsed_s=3.0)
    emit(battle.left, p.TOKEN, text="Hello", n=1)
    done(battle.left, "Hello", 55.5)
    emit(battle.right, p.FAILED, reason="Worker smollm2-135m-awq-1234 exited with signal 9", code="worker_died")
    comm, connected, _ = await connect(battle, owner)
    assert connected
    frames = await receive_all(comm, 1.0)
    for secret in ("55.5", "smollm2", "awq", "gemma", "Tokens/s"):
        assert secret not in frames
    assert "Run the match again" in frames and "Speeds are shown at the reveal" in frames
    await comm.disconnect()


async def test_another_user_and_anonymous_are_refused(battle, outsider):
    for user in (outsider, AnonymousUser()):
        _comm, connected, code = await connect(battle, user)
        assert not connected and code == 4404


async def test_stop_cancels_both_sides_and_bad_frames_get_an_error(battle, owner):
    comm, _connected, _ = await connect(battle, owner)
    await receive_all(comm, 0.3)
    await comm.send_to(text_data="{not json")
    assert "must be JSON" in await comm.receive_from()
    await comm.send_to(text_data='{"action": "delete-everything"}')
    assert "Unknown action" in await comm.receive_from()
    await comm.send_to(text_data='{"action": "stop"}')
    await receive_all(comm, 0.3)
    keys, client = streams.keys(), streams.client()
    assert client.get(keys.cancel(str(battle.left.id))) == b"user"
    assert client.get(keys.cancel(str(battle.right.id))) == b"user"
    await comm.disconnect()


async def database(fn, *args, **kwargs):
    return await sync_to_async(fn)(*args, **kwargs)
