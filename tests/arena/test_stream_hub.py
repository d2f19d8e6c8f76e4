"""The WebSockets' shared Redis (arena/streams.py): one pool and one `StreamHub` per event loop,
reading each watched stream once for every socket on it; and the sockets' frame coalescing
(arena/generations/consumers.py). Against real Redis, streams written as a worker writes them."""

import asyncio
import json
import re
import time

import pytest
from channels.routing import URLRouter

from arena import streams
from arena.generations.models import Generation
from arena.routing import websocket_urlpatterns
from inference import protocol as p
from tests.arena.socket_client import WebsocketCommunicator

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]
DATA_N = re.compile(r'hx-swap-oob="beforeend" data-n="(\d+)"')


@pytest.fixture
def gens(owner, smollm):
    made = [Generation.objects.create(owner=owner, model=smollm, prompt="Hi", params={}) for _ in range(3)]
    yield made
    keys = streams.keys()
    for gen in made:
        streams.client().delete(keys.stream(str(gen.id)), keys.viewers(str(gen.id)), keys.cancel(str(gen.id)))


def stream_of(gen) -> str:
    return streams.keys().stream(str(gen.id))


def emit(gen, kind, **fields) -> bytes:
    return streams.client().xadd(stream_of(gen), p.event(kind, **fields))


async def connect(gen, user, query="?format=json"):
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/generations/{gen.id}/{query}")
    comm.scope["user"] = user
    connected, _ = await comm.connect()
    assert connected
    return comm


async def json_frames(comm, count: int) -> list[dict]:
    return [json.loads(await comm.receive_from(timeout=3)) for _ in range(count)]


def hub() -> streams.StreamHub:
    return streams.shared().hub


async def test_two_sockets_on_one_stream_get_every_entry_once_and_in_order_from_one_read(gens, owner):
    gen = gens[0]
    emit(gen, p.STARTED, prompt_tokens=3)
    a, b = await connect(gen, owner), await connect(gen, owner)
    assert [f["type"] for f in await json_frames(a, 1)] == [p.STARTED]  # the replay
    assert [f["type"] for f in await json_frames(b, 1)] == [p.STARTED]
    assert list(hub().watchers) == [stream_of(gen)] and len(hub().watchers[stream_of(gen)]) == 2
    for n in range(1, 21):
        emit(gen, p.TOKEN, text=f"t{n} ", n=n)
    emit(gen, p.DONE, text="".join(f"t{n} " for n in range(1, 21)))
    for comm in (a, b):
        frames = await json_frames(comm, 21)
        assert [f.get("n") for f in frames[:-1]] == list(range(1, 21))
        assert frames[-1]["type"] == p.DONE
        assert await comm.receive_nothing(timeout=0.2)
        await comm.disconnect()


async def test_a_late_joiner_mid_stream_gets_the_replay_then_the_rest_without_gap_or_duplicate(gens, owner):
    gen = gens[0]
    first = await connect(gen, owner)
    for n in range(1, 6):
        emit(gen, p.TOKEN, text="x", n=n)
    assert [f["n"] for f in await json_frames(first, 5)] == [1, 2, 3, 4, 5]
    late = await connect(gen, owner)
    assert [f["n"] for f in await json_frames(late, 5)] == [1, 2, 3, 4, 5]  # replayed
    for n in range(6, 11):
        emit(gen, p.TOKEN, text="x", n=n)
    assert [f["n"] for f in await json_frames(late, 5)] == [6, 7, 8, 9, 10]
    assert [f["n"] for f in await json_frames(first, 5)] == [6, 7, 8, 9, 10]
    assert await late.receive_nothing(timeout=0.2)
    for comm in (first, late):
        await comm.disconnect()


async def test_entries_the_hub_read_before_a_subscriber_joined_are_caught_up_and_repeats_dropped(gens):
    """A subscriber whose replay ended before the hub's position (the hub read on meanwhile)
    gets the entries in between; one whose replay went past the hub's gets no repeats."""
    gen, shared = gens[0], streams.shared()
    shared.acquire()
    try:
        ids = [emit(gen, p.TOKEN, text="x", n=n) for n in (1, 2, 3)]
        ahead = await shared.hub.subscribe({stream_of(gen): "0"})
        assert [ev["n"] for _key, ev in (await ahead.next(3))[stream_of(gen)]] == [1, 2, 3]
        behind = await shared.hub.subscribe({stream_of(gen): ids[0]})  # its replay had token 1 only
        # ...at once, not when the stream's next entry comes (the last ones may have been written)
        assert [ev["n"] for _key, ev in (await behind.next(0.5))[stream_of(gen)]] == [2, 3]
        emit(gen, p.TOKEN, text="x", n=4)
        assert [ev["n"] for _key, ev in (await behind.next(3))[stream_of(gen)]] == [4]
        assert [ev["n"] for _key, ev in (await ahead.next(3))[stream_of(gen)]] == [4]
        # Entries the subscriber already has (its replay went further than the hub's read) come once.
        repeat = streams.Subscription(shared.hub, {stream_of(gen): ids[1]})
        entries = [(streams.entry_key(i), {"type": p.TOKEN, "n": n}) for n, i in enumerate(ids, 1)]
        repeat.put(stream_of(gen), (0, 0), entries)
        assert [ev["n"] for _key, ev in (await repeat.next(0))[stream_of(gen)]] == [3]
        ahead.close()
        behind.close()
    finally:
        await shared.release()


async def test_an_event_written_again_into_a_restarted_redis_reaches_each_follower_once(gens):
    """A worker's pipeline that Redis applied but died before answering is resent (the client's
    retries) into the fresh Redis: the same event under a new id. The follower that read the first
    copy before the crash must not show its text twice (the soak once streamed "osisosis")."""
    gen, shared = gens[0], streams.shared()
    shared.acquire()
    try:
        follower = await shared.hub.subscribe({stream_of(gen): "0"})
        first = p.event(p.TOKEN, text="osis", n=7)
        ms, _seq = streams.entry_key(streams.client().xadd(stream_of(gen), first))
        assert [ev["text"] for _key, ev in (await follower.next(3))[stream_of(gen)]] == ["osis"]
        streams.client().delete(stream_of(gen))  # Redis restarted empty...
        streams.client().xadd(stream_of(gen), first, id=f"{ms + 1}-0")  # ...and the retried pipeline wrote it again
        emit(gen, p.TOKEN, text="\n3.", n=8)
        assert [ev["text"] for _key, ev in (await follower.next(3))[stream_of(gen)]] == ["\n3."]
        follower.close()
    finally:
        await shared.release()


async def test_a_socket_that_leaves_gets_nothing_more_and_a_stream_nobody_watches_is_not_read(gens, owner):
    gen, other = gens[0], gens[1]
    stays, leaves = await connect(gen, owner), await connect(gen, owner)
    watcher = await connect(other, owner)
    for comm in (stays, leaves, watcher):
        assert await comm.receive_nothing(timeout=0.2)  # nothing written yet: no replay frame
    assert set(hub().watchers) == {stream_of(gen), stream_of(other)}
    sub = next(iter(hub().watchers[stream_of(gen)]))
    await leaves.disconnect()
    assert len(hub().watchers[stream_of(gen)]) == 1
    emit(gen, p.TOKEN, text="a", n=1)
    assert (await json_frames(stays, 1))[0]["n"] == 1
    await stays.disconnect()
    assert stream_of(gen) not in hub().watchers and stream_of(gen) not in hub().positions
    emit(gen, p.TOKEN, text="b", n=2)  # may end the read in flight, begun while it was watched...
    await asyncio.sleep(0.3)
    reads = hub().reads
    emit(gen, p.TOKEN, text="b", n=3)  # ...but the reads after it leave it out: nothing wakes for it
    await asyncio.sleep(0.3)
    assert hub().reads == reads and not sub.streams
    emit(other, p.TOKEN, text="c", n=1)
    assert (await json_frames(watcher, 1))[0]["n"] == 1
    await watcher.disconnect()
    assert not hub().watchers and (hub().task is None or hub().task.done())  # the last one out stops it


async def test_a_burst_of_tokens_goes_in_few_frames_while_the_first_token_and_the_end_go_at_once(
        gens, owner, settings):
    # An interval long enough that "held back" and "sent at once" stay apart on a loaded machine:
    # at once is within half of it, held is at least most of it.
    settings.ARENA_WS_FRAME_INTERVAL_MS = 2000
    gen = gens[0]
    emit(gen, p.STARTED, prompt_tokens=3)
    comm = await connect(gen, owner, query="")
    assert 'data-state="running"' in await comm.receive_from(timeout=3)  # the replay

    written = time.monotonic()
    emit(gen, p.TOKEN, text="a", n=1)
    frame = await comm.receive_from(timeout=3)
    first_at = time.monotonic()
    assert DATA_N.findall(frame) == ["1"] and first_at - written < 1.0  # not held back

    for n in range(2, 42):  # a burst: 40 tokens within the interval
        emit(gen, p.TOKEN, text="b", n=n)
    frames = []
    while len(seen := [int(n) for f in frames for n in DATA_N.findall(f)]) < 40:
        frames.append(await comm.receive_from(timeout=5))
    burst_at = time.monotonic()
    assert seen == list(range(2, 42))  # every token once, in order
    assert len(frames) <= 3  # coalesced (one frame here, unless the machine stalled the writes)
    assert burst_at - first_at >= 1.6  # held until the interval since the last frame was up

    emit(gen, p.TOKEN, text="c", n=42)
    emit(gen, p.DONE, text="a" + "b" * 40 + "c")
    end = await comm.receive_from(timeout=3)
    assert time.monotonic() - burst_at < 1.0  # the end is not held back, nor the token with it
    assert DATA_N.findall(end) == ["42"] and 'data-state="done"' in end
    await comm.disconnect()


async def test_many_sockets_share_a_few_redis_connections_and_one_blocking_read(gens, owner, settings):
    settings.ARENA_WS_REDIS_CONNECTIONS = 3
    socks = [await connect(gens[i % 3], owner) for i in range(24)]
    for gen in gens:
        emit(gen, p.TOKEN, text="x", n=1)
    for comm in socks:
        assert (await json_frames(comm, 1))[0]["n"] == 1
    name = streams.shared().client_name
    ours = [c for c in streams.client().client_list() if c.get("name") == name]
    assert 1 <= len(ours) <= 3  # 24 sockets; it was a connection each
    assert sum(c.get("cmd") == "xread" for c in ours) <= 1  # one follower, blocked in its read
    assert set(hub().watchers) == {stream_of(gen) for gen in gens}
    for comm in socks:
        await comm.disconnect()
    assert not [c for c in streams.client().client_list() if c.get("name") == name]  # closed with the last


async def test_a_read_that_fails_for_good_fails_every_subscriber(gens):
    class Down:
        async def xread(self, *args, **kwargs):
            raise ConnectionError("Redis is gone")

    failing = streams.StreamHub(Down())
    two = await failing.subscribe({stream_of(gens[0]): "0", stream_of(gens[1]): "0"})
    one = await failing.subscribe({stream_of(gens[0]): "0"})
    for sub in (one, two):
        with pytest.raises(ConnectionError):
            await sub.next(3)
    assert not failing.watchers and not failing.positions  # the next subscriber starts afresh


async def test_a_follower_cancelled_before_a_zero_wait_stops_instead_of_waiting_for_good():
    """A socket's pump cancelled as it closed, its frame interval just over (a wait of 0): the
    cancel was swallowed (CPython gh-134471) and the pump waited for events that never came, its
    viewer still counted, so a close waited for it for good (seen when 20 sockets closed at once)."""
    subscription = streams.Subscription(hub(), {"arena:stream:gone": "0"})

    async def follow():
        asyncio.current_task().cancel()  # requested before the wait starts
        await subscription.next(0)

    following = asyncio.create_task(follow())
    done, _ = await asyncio.wait({following}, timeout=5)
    assert following in done and following.cancelled()
