"""A comparison side ending live, over its real WebSocket and real Redis streams: its status line says
the cut and its figures show the wait in line and for the model apart, as the page does once reloaded."""

import re
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter

from arena import streams
from arena.battles.actions import start_battle
from arena.generations.models import Generation
from arena.routing import websocket_urlpatterns
from inference import protocol as p
from tests.arena.socket_client import WebsocketCommunicator

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def emit(gen, kind, **fields):
    streams.client().xadd(streams.keys().stream(str(gen.id)), p.event(kind, **fields))


def waited(gen, in_line_s: float, load_s: float) -> None:
    """What the fair line and the run record before the worker begins."""
    Generation.objects.filter(id=gen.id).update(admitted_at=gen.created_at + timedelta(seconds=in_line_s))
    gen.record_load_wait(load_s)


async def frames(comm, quiet_s: float = 1.0) -> str:
    out = []
    while not await comm.receive_nothing(timeout=quiet_s):
        out.append(await comm.receive_from())
    return "".join(out)


async def test_a_comparison_side_cut_at_its_limit_ends_live_with_its_waits_apart(owner, catalogue):
    sides = {s: {"model": catalogue[i], "params": {"max_new_tokens": 8}} for s, i in (("left", 2), ("right", 3))}
    battle = await sync_to_async(start_battle)(owner, prompt="Count.", sides=sides)
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/battles/{battle.id}/")
    comm.scope["user"] = owner
    assert (await comm.connect())[0]
    await frames(comm, 0.5)
    left = battle.left
    await sync_to_async(waited)(left, 1.5, 6.25)
    began = left.created_at.timestamp() + 7.75
    emit(left, p.STARTED, prompt_tokens=3, queue_s=0.0)
    emit(left, p.DONE, text="1 2 3 4 5 6 7 8", finish_reason="length", metrics={
        "generated_tokens": 8, "decode_tokens_per_s": 20.0, "arrival_time": began, "first_scheduled_time": began,
        "first_token_time": began + 0.5, "time_in_queue": 0.25})
    html = await frames(comm)
    await comm.disconnect()
    status = re.search(r'<div id="left-status" class="[^"]*" data-state="done" data-finish="length">([^<]*)<', html)
    assert status and status.group(1) == "Stopped at 8 tokens", html
    metrics = html.split('id="left-metrics"')[-1].split("</dl>")[0]  # the end's figures
    assert 'data-metric="ttft">0.50 s<' in metrics and 'data-metric="load">6.25 s<' in metrics
    assert 'data-metric="queue">1.75 s<' in metrics  # the fair line, then the worker's own queue
