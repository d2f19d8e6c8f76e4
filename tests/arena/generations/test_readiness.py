"""Issue 39: blindness through load times. While a user's anonymous battle is not voted yet, a
one-token playground request to each entry would show which are loaded (0.25 s against 2.02 s),
so the drawn pair would be known before the vote. The user's load and queue figures are withheld
everywhere (arena/generations/readiness.py) until the vote reveals the battle; then they show.

Real parts: the anonymous battle is drawn and started by its service, the probe is a playground
generation stored as its run stores it, read through the real API, page and WebSocket (real Redis)."""

import json
import random
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter

from arena import streams
from arena.accounts.models import ApiToken
from arena.battles import actions
from arena.battles.models import ArenaExclusion
from arena.catalogue.models import ModelEntry
from arena.generations import readiness
from arena.generations.models import Generation
from arena.routing import websocket_urlpatterns
from inference import protocol as p
from tests.arena.api_client import api
from tests.arena.factories import finish_battle
from tests.arena.socket_client import WebsocketCommunicator

pytestmark = pytest.mark.django_db(transaction=True)
PAIR = ("smollm2-135m-llamacpp", "gemma-3-270m-llamacpp")
LOAD_S, IN_LINE_S = 2.02, 1.375  # figures no other part of these pages shows by chance
WITHHELD_MARK = 'data-metric="load" data-withheld'


@pytest.fixture
def battle(owner, catalogue):
    """The owner's anonymous battle on PAIR (every other entry kept out of the draw), not voted yet."""
    for m in catalogue:
        if m.slug not in PAIR:
            ArenaExclusion.objects.create(model=m, reason="kept out of this test's draw")
    ModelEntry.objects.filter(slug__in=PAIR, base=True).update(in_chat_draws=True)
    return actions.start_anonymous(owner, prompt="Hi", rng=random.Random(3))


def probe(owner, model, *, finished: bool = True) -> Generation:
    """The owner's one-token playground generation on `model`, which waited in line and for the model
    to load (a cold start), as the line and the run record them."""
    gen = Generation.objects.create(owner=owner, model=model, prompt="Hi", params={"max_new_tokens": 1})
    Generation.objects.filter(id=gen.id).update(admitted_at=gen.created_at + timedelta(seconds=IN_LINE_S))
    gen = Generation.objects.select_related("model").get(id=gen.id)
    gen.record_load_wait(LOAD_S)
    if finished:
        began = gen.created_at.timestamp() + IN_LINE_S + LOAD_S
        assert gen.finish(Generation.Status.DONE, text="Hello", finish_reason="length", metrics={
            "generated_tokens": 1, "arrival_time": began, "first_scheduled_time": began,
            "first_token_time": began + 0.25, "finished_time": began + 0.25, "time_in_queue": 0.0})
    return gen


def vote(battle) -> None:
    battle = finish_battle(battle)
    assert actions.vote(battle, "left") and battle.revealed


def test_the_load_time_probe_shows_nothing_during_an_anonymous_battle_and_all_after_its_vote(owner, battle, client):
    gen = probe(owner, battle.left.model)
    key = ApiToken.issue(owner)
    client.force_login(owner)

    during = api(client, "get", f"/api/v1/generations/{gen.id}", key).json()
    assert during["metrics"]["load_wait_s"] is None and during["metrics"]["queue_wait_s"] is None
    assert during["metrics"]["withheld"] == readiness.WITHHELD
    assert not readiness.TIMING_KEYS & set(during["request_metrics"]) and during["finished_at"] is None
    page = client.get(gen.get_absolute_url()).content.decode()
    assert WITHHELD_MARK in page and "2.02 s" not in page and "1.38 s" not in page

    vote(battle)
    after = api(client, "get", f"/api/v1/generations/{gen.id}", key).json()
    assert after["metrics"]["load_wait_s"] == pytest.approx(LOAD_S)
    assert after["metrics"]["queue_wait_s"] == pytest.approx(IN_LINE_S)
    assert "withheld" not in after["metrics"] and after["request_metrics"]["arrival_time"] and after["finished_at"]
    page = client.get(gen.get_absolute_url()).content.decode()
    assert WITHHELD_MARK not in page and 'data-metric="load">2.02 s<' in page and 'data-metric="queue">1.38 s<' in page


def test_another_users_figures_are_not_withheld_for_this_users_battle(owner, outsider, battle, client):
    gen = probe(outsider, battle.left.model)
    assert api(client, "get", f"/api/v1/generations/{gen.id}", ApiToken.issue(outsider)).json()[
        "metrics"]["load_wait_s"] == pytest.approx(LOAD_S)


def emit(gen, kind, **fields):
    streams.client().xadd(streams.keys().stream(str(gen.id)), p.event(kind, **fields))


async def frames(comm, quiet_s: float = 1.0) -> list[str]:
    out = []
    while not await comm.receive_nothing(timeout=quiet_s):
        out.append(await comm.receive_from())
    return out


async def watch(owner, gen, fmt: str = "") -> list[str]:
    """What the generation's socket sends its owner while a cold model loads and the answer ends."""
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/generations/{gen.id}/{fmt}")
    comm.scope["user"] = owner
    assert (await comm.connect())[0]
    sent = await frames(comm, 0.5)
    began = gen.created_at.timestamp() + IN_LINE_S + LOAD_S
    emit(gen, p.LOADING, elapsed_s=LOAD_S, model=gen.model.name, progress="")
    emit(gen, p.STARTED, prompt_tokens=3, queue_s=0.0625)
    emit(gen, p.TOKEN, text="Hello", n=1)
    await sync_to_async(gen.finish)(Generation.Status.DONE, text="Hello", finish_reason="length", metrics={
        "generated_tokens": 1, "arrival_time": began, "first_scheduled_time": began, "first_token_time": began + 0.25,
        "time_in_queue": 0.0625, "ttft_s": 0.25})
    emit(gen, p.DONE, text="Hello", finish_reason="length", metrics={
        "generated_tokens": 1, "arrival_time": began, "first_scheduled_time": began, "first_token_time": began + 0.25,
        "time_in_queue": 0.0625, "ttft_s": 0.25})
    sent += await frames(comm)
    await comm.disconnect()
    return sent


@pytest.mark.asyncio
async def test_the_sockets_frames_show_no_loading_and_no_waits_during_the_battle_then_do(owner, battle):
    model = battle.left.model
    gen = await sync_to_async(probe)(owner, model, finished=False)
    events = [json.loads(frame) for frame in await watch(owner, gen, "?format=json")]
    kinds = [ev["type"] for ev in events]
    assert p.LOADING not in kinds and p.STARTED in kinds and kinds[-1] == p.DONE
    started = next(ev for ev in events if ev["type"] == p.STARTED)
    assert "queue_s" not in started
    assert not readiness.TIMING_KEYS & set(events[-1]["metrics"]) and events[-1]["metrics"]["ttft_s"] == 0.25

    html = "".join(await watch(owner, await sync_to_async(probe)(owner, model, finished=False)))
    assert 'data-state="loading"' not in html and gen.model.name not in html  # no "Loading model…" line
    assert WITHHELD_MARK in html and "2.02 s" not in html

    await sync_to_async(vote)(battle)
    named = "".join(await watch(owner, await sync_to_async(probe)(owner, model, finished=False)))
    assert 'data-state="loading"' in named and 'data-metric="load">2.02 s<' in named
    events = [json.loads(frame) for frame in
              await watch(owner, await sync_to_async(probe)(owner, model, finished=False), "?format=json")]
    assert p.LOADING in [ev["type"] for ev in events] and events[-1]["metrics"]["time_in_queue"] == 0.0625
