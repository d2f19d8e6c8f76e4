"""The generation WebSocket, against real Redis streams written as a worker writes them."""

import asyncio
import json
import time

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from django.contrib.auth.models import AnonymousUser

from arena import streams
from arena.generations.models import Generation
from arena.routing import websocket_urlpatterns
from inference import protocol as p
from tests.arena.socket_client import WebsocketCommunicator

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture
def gen(owner, smollm):
    return Generation.objects.create(owner=owner, model=smollm, prompt="Hi", params={})


def emit(gen, kind, **fields):
    streams.client().xadd(streams.keys().stream(str(gen.id)), p.event(kind, **fields))


async def connect(gen, user, query=""):
    app = URLRouter(websocket_urlpatterns)
    comm = WebsocketCommunicator(app, f"/ws/generations/{gen.id}/{query}")
    comm.scope["user"] = user
    connected, code = await comm.connect()
    return comm, connected, code


async def test_owner_gets_the_replay_then_live_tokens_then_the_outcome(gen, owner):
    emit(gen, p.STARTED, prompt_tokens=3, queue_s=0.0)
    emit(gen, p.TOKEN, text="Hello", n=1)
    comm, connected, _ = await connect(gen, owner)
    assert connected
    snapshot = await comm.receive_from()
    assert 'id="gen-output"' in snapshot and "Hello" in snapshot and 'data-state="running"' in snapshot
    assert 'data-n="1"' in snapshot  # the replay holds token 1
    emit(gen, p.TOKEN, text=" <b>world</b>", n=2)
    append = await comm.receive_from()
    assert 'hx-swap-oob="beforeend"' in append and "&lt;b&gt;world&lt;/b&gt;" in append and "<b>" not in append
    assert 'data-n="2"' in append
    emit(gen, p.DONE, text="Hello <b>world</b>", finish_reason="stop",
         metrics={"generated_tokens": 2, "decode_tokens_per_s": 12.5,
                  "first_scheduled_time": gen.created_at.timestamp(),
                  "first_token_time": gen.created_at.timestamp() + 1.5})
    final = await comm.receive_from()
    assert 'data-state="done"' in final and "12.5" in final and "1.50 s" in final
    await comm.disconnect()


async def test_on_the_playground_the_outcome_also_updates_the_recent_list(gen, owner):
    """?recent=1 (the playground page): the end's frame carries the recent list's line for this
    generation in its final state; the permalink page, which has no such list, gets none."""
    emit(gen, p.STARTED, prompt_tokens=3, queue_s=0.0)
    emit(gen, p.DONE, text="Hi there", finish_reason="stop", metrics={"generated_tokens": 2})
    for query, listed in (("?recent=1", True), ("", False)):
        comm, connected, _ = await connect(gen, owner, query)
        assert connected
        frame = await comm.receive_from()
        await comm.disconnect()
        assert 'data-state="done"' in frame
        line = f'<li id="recent-{gen.id}" data-generation="{gen.id}" hx-swap-oob="true">'
        assert (line in frame) is listed, frame
        if listed:
            assert '<span class="status-done" data-state="done" data-finish="done">Done</span>' in frame.split(line)[1]


async def test_on_the_playground_the_recent_line_follows_the_answer_from_queued_to_generating(gen, owner):
    """The page lists the new generation as queued; once its worker starts, the line says so too
    (it said "Queued" beside an answer already streaming)."""
    comm, connected, _ = await connect(gen, owner, "?recent=1")
    assert connected
    await comm.receive_from()  # the snapshot: nothing happened yet
    emit(gen, p.STARTED, prompt_tokens=3, queue_s=0.0)
    frame = await comm.receive_from()
    await comm.disconnect()
    line = frame.split(f'<li id="recent-{gen.id}" data-generation="{gen.id}" hx-swap-oob="true">')[1]
    assert '<span class="status-running" data-state="running" data-finish="running">Generating</span>' in line


async def test_json_format_sends_events(gen, owner):
    emit(gen, p.TOKEN, text="a", n=1)
    comm, connected, _ = await connect(gen, owner, "?format=json")
    assert connected
    first = json.loads(await comm.receive_from())
    assert first["type"] == "token" and first["text"] == "a"
    await comm.disconnect()


async def test_another_user_and_anonymous_are_refused(gen, outsider):
    for user in (outsider, AnonymousUser()):
        _comm, connected, code = await connect(gen, user)
        assert not connected and code == 4404


async def test_malformed_frames_get_an_error_and_the_socket_stays_up(gen, owner):
    comm, connected, _ = await connect(gen, owner, "?format=json")
    assert connected
    for frame in ("not json", json.dumps([1, 2]), json.dumps({"action": "explode"}), "x" * 10_000):
        await comm.send_to(text_data=frame)
        reply = json.loads(await comm.receive_from())
        assert reply["type"] == "error"
    await comm.send_to(bytes_data=b"\x00\xff")
    assert json.loads(await comm.receive_from())["type"] == "error"
    await comm.send_to(text_data=json.dumps({"action": "stop"}))
    await asyncio.sleep(0.2)
    assert streams.client().get(streams.keys().cancel(str(gen.id))) == b"user"
    await comm.disconnect()


async def test_a_finished_generation_whose_stream_expired_is_served_from_the_database(gen, owner):
    await sync_to_async(gen.finish)(Generation.Status.DONE, text="stored answer", metrics={"generated_tokens": 2})
    comm, connected, _ = await connect(gen, owner)
    assert connected
    html = await comm.receive_from()
    assert "stored answer" in html and 'data-state="done"' in html
    await comm.disconnect()


async def test_viewers_are_counted_and_leaving_is_recorded(gen, owner):
    comm, _, _ = await connect(gen, owner)
    await comm.receive_from()
    key = streams.keys().viewers(str(gen.id))
    assert streams.client().hget(key, "count") == b"1"
    await comm.disconnect()
    assert streams.client().hget(key, "count") == b"0"
    assert streams.client().hget(key, "left_at") is not None


async def status_socket(user):
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/status/")
    comm.scope["user"] = user
    connected, code = await comm.connect()
    return comm, connected, code


async def test_the_status_socket_is_for_staff_and_streams_the_orchestrators_snapshot(owner):
    for user in (AnonymousUser(), owner):
        _, connected, code = await status_socket(user)
        assert not connected and code == 4403
    owner.is_staff = True
    client, keys = streams.client(), streams.keys()
    snapshot = {"at": time.time(), "nodes": [{"node": "local", "budget_mb": 2000, "reserved_mb": 900}],
                "workers": [{"worker_id": "w-1", "slug": "smollm2-135m", "node": "local", "state": "ready",
                             "reserved_mb": 900, "measured_mb": 900, "in_flight": 2, "ready_at": None,
                             "cold_start_s": 4.2}]}
    client.set(keys.orchestrator_status(), json.dumps(snapshot))
    try:
        comm, connected, _ = await status_socket(owner)
        assert connected
        html = await comm.receive_from()
        assert 'hx-swap-oob="true"' in html and 'data-worker="w-1"' in html and "900 MB measured" in html
        assert 'value="45"' in html  # 900 of 2000 MB reserved
        snapshot["workers"][0]["state"] = "stopping"
        client.set(keys.orchestrator_status(), json.dumps(snapshot))
        assert 'data-state="stopping"' in await comm.receive_from(timeout=3)
        await comm.disconnect()
    finally:
        client.delete(keys.orchestrator_status())
