"""The Django side's handles on Redis: one client per process, the `Keys` (inference/protocol.py,
where every key name is defined) under our prefix, and what the followers of generations' streams
in a server process (its WebSockets and the OpenAI-compatible API's completions) share: one
asyncio connection pool and one `StreamHub` that reads each watched generation's stream once and
fans its entries out to everyone watching it (`following` for one stream from its start)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
import uuid
import weakref
from collections import deque
from collections.abc import AsyncIterator, Mapping
from functools import lru_cache

import redis
import redis.asyncio as aioredis
from django.conf import settings
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from inference import protocol as p
from inference import redis_connect
from inference.protocol import STREAM_TTL_S, Keys

log = logging.getLogger(__name__)

# Longer than any blocking read we make (XREAD BLOCK), or redis-py's default 5 s
# socket timeout would cut those reads off.
SOCKET_TIMEOUT_S = 30
# A Redis restart is ridden out inside each command (reconnect, then the command again):
# 0.05 s doubling to 1 s between tries, about 17 s in all, as the inference workers do.
# A blocking read cut off by the restart is simply read again from the last entry seen.
RETRIES = 20
RETRY_ON = [redis.ConnectionError, redis.TimeoutError]


def _backoff() -> ExponentialBackoff:
    return ExponentialBackoff(cap=1.0, base=0.05)


def keys() -> Keys:
    """Built on each call (it only holds the prefix), so a changed setting applies at once."""
    return Keys(settings.ARENA_REDIS_PREFIX)


@lru_cache(maxsize=1)
def client() -> redis.Redis:
    return redis_connect.connect(settings.REDIS_URL, health_check_interval=30, socket_timeout=SOCKET_TIMEOUT_S,
                                 retry=Retry(_backoff(), RETRIES), retry_on_error=RETRY_ON)


def async_client() -> aioredis.Redis:
    """A new asyncio client of its own (the caller closes it). Stream followers share `shared()` instead."""
    return redis_connect.connect_async(settings.REDIS_URL, socket_timeout=SOCKET_TIMEOUT_S, health_check_interval=30,
                                       retry=AsyncRetry(_backoff(), RETRIES), retry_on_error=RETRY_ON)


async def replay(redis_client: aioredis.Redis, stream: str) -> list[tuple[EntryId, dict]]:
    """Every entry of `stream` so far, as (id, fields): what a follower shows before it subscribes
    from the last id (nothing if the stream is gone)."""
    entries = await redis_client.xrange(stream)
    return [(entry_id, fields) for entry_id, fields in entries or () if entry_id is not None and fields is not None]


# --- watch (Keys.watch): a generation whose follower (the Celery task) is gone is ended by the sweeper ---
def watch_ttl_s() -> float:
    return settings.ARENA_WATCH_TTL_S


# --- viewers: a web generation nobody watches any more is cancelled ------------------
async def viewer_joined(redis_client: aioredis.Redis, generation_id: str) -> None:
    key = keys().viewers(generation_id)
    pipe = redis_client.pipeline(transaction=True)
    pipe.hincrby(key, "count", 1)
    pipe.hdel(key, "left_at")
    pipe.expire(key, STREAM_TTL_S)
    await pipe.execute()


async def viewer_left(redis_client: aioredis.Redis, generation_id: str) -> None:
    key = keys().viewers(generation_id)
    try:
        if await redis_client.hincrby(key, "count", -1) <= 0:
            await redis_client.hset(key, "left_at", repr(time.time()))
    except Exception:  # Redis gone: the generation's own timeout still ends it
        log.warning("Could not record that a viewer left generation %s", generation_id)


# A background task of a socket (its pump, the logged-out listener) cancelled as the socket closes:
# a cancel can be swallowed inside a library's timeout (CPython gh-134471: `asyncio.timeout(0)`
# eats an earlier cancel; seen in CI as a listener reading Redis pub/sub on after its cancel), and
# a close that waited for such a task waited for good, its viewer still counted.
RECANCEL_S = 0.1  # how often the cancel is sent again while the task runs on
STOP_GRACE_S = 5.0  # then the close goes on without it (it is logged)


async def stop_task(task: asyncio.Task, what: str, grace_s: float = STOP_GRACE_S) -> None:
    """Cancel `task` and wait for it to end, cancelling it again while a cancel goes unheard; after
    `grace_s` the caller goes on without it. Whatever it ends with is its own (it logs its errors)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    while not task.done():
        left = deadline - loop.time()
        if left <= 0:
            log.warning("%s did not stop when cancelled: the close goes on without it", what)
            return
        task.cancel()
        await asyncio.wait({task}, timeout=min(RECANCEL_S, left))
    if not task.cancelled():
        task.exception()  # retrieved: an error it ended with was logged where it happened


# --- what the stream followers of a server process share ------------------------------------------
# Every socket (and every OpenAI-compatible completion) used to open its own asyncio client and
# follow its stream(s) with its own blocking XREAD: 200 viewers meant 200 connections, and each
# token was read, parsed and woken for 200 times. Now one event loop (in uvicorn: the process) has
# one bounded connection pool, and one `StreamHub` that follows every watched stream with one
# XREAD loop and hands each new entry, parsed once, to each `Subscription` on that stream.
# asyncio pools are bound to the loop they run in, hence one `SocketRedis` per loop (tests
# run each in a loop of its own; a response consumed by async_to_sync, in a loop of its own
# too): a follower acquires and releases it from the loop it reads in.
_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, SocketRedis] = weakref.WeakKeyDictionary()
_pool_numbers = itertools.count(1)
HUB_READ_COUNT = 200  # entries per stream per read; the rest come with the next read
# A writer's pipeline that Redis applied but died before answering is sent again by the client's
# retries, into the restarted Redis: a follower that read the first copy before the crash then
# reads the same event again under a new id. Each event's fields (its `t` is taken when it is made,
# so a resent one is identical) are remembered for the last this-many events of each stream.
RECENT_EVENTS = 512
EntryId = bytes | str  # a stream entry's id as redis-py gives it (bytes), or as we write one ("0", "1-0")


def entry_key(entry_id: object) -> tuple[int, int]:
    """A stream entry id (b"1732390000123-0", "0") as a pair that compares as Redis orders ids."""
    text = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
    ms, _, seq = text.partition("-")
    return int(ms), int(seq or 0)


def entry_id(key: tuple[int, int]) -> str:
    return f"{key[0]}-{key[1]}"


def shared() -> SocketRedis:
    """This event loop's pool, client and hub (made on first use)."""
    loop = asyncio.get_running_loop()
    found = _shared.get(loop)
    if found is None:
        found = _shared[loop] = SocketRedis()
    return found


@contextlib.asynccontextmanager
async def following(stream: str) -> AsyncIterator[Subscription]:
    """A subscription to `stream` from its first entry through this loop's hub, for as long as
    the block runs (an HTTP response following a generation); the loop's pool is released after,
    also when the block is cancelled (the client went away)."""
    loop_redis = shared()
    loop_redis.acquire()
    try:
        subscription = await loop_redis.hub.subscribe({stream: "0"})
        try:
            yield subscription
        finally:
            subscription.close()
    finally:
        await loop_redis.release()


class SocketRedis:
    """One loop's bounded connection pool (a follower waits for a free connection rather than
    opening one), the client over it and the hub. Sockets `acquire` it on opening and
    `release` it on closing (a completion: `following`); when the last one leaves, the hub
    stops and the idle connections are closed (the next follower opens them again)."""

    def __init__(self):
        self.client_name = f"arena-sockets-{os.getpid()}-{next(_pool_numbers)}"  # CLIENT LIST tells ours apart
        self.pool = redis_connect.async_pool(
            settings.REDIS_URL, max_connections=settings.ARENA_WS_REDIS_CONNECTIONS, timeout=SOCKET_TIMEOUT_S,
            socket_timeout=SOCKET_TIMEOUT_S, health_check_interval=30, client_name=self.client_name,
            retry=AsyncRetry(_backoff(), RETRIES), retry_on_error=RETRY_ON)
        self.client = aioredis.Redis(connection_pool=self.pool)
        self.hub = StreamHub(self.client)
        self.users = 0

    def acquire(self) -> aioredis.Redis:
        self.users += 1
        return self.client

    async def release(self) -> None:
        self.users -= 1
        if self.users > 0:
            return
        await self.hub.stop()
        if self.users == 0:  # nobody came in meanwhile
            await self.pool.disconnect(inuse_connections=False)


class Subscription:
    """One socket's share of the hub: the streams it watches, each with the id of the last
    entry it has. `next` gives what is new, in order and each entry once: entries it already
    has (from its replay) are dropped, and entries the hub read before it joined are read
    with XRANGE, so a late joiner has neither a gap nor a duplicate between replay and follow."""

    def __init__(self, hub: StreamHub, last_ids: Mapping[str, object]):
        self.hub = hub
        self.last = {stream: entry_key(last) for stream, last in last_ids.items()}
        self.recent: dict[str, dict[tuple, None]] = {stream: {} for stream in self.last}  # RECENT_EVENTS
        self._batches: deque[tuple[str, tuple[int, int], list]] = deque()
        self._ready = asyncio.Event()
        self._failed: BaseException | None = None

    @property
    def streams(self) -> list[str]:
        return list(self.last)

    def put(self, stream: str, after: tuple[int, int], entries: list) -> None:
        """From the hub: `entries` are every entry of `stream` after the id `after`, parsed."""
        self._batches.append((stream, after, entries))
        self._ready.set()

    def fail(self, exc: BaseException) -> None:
        self._failed = exc
        self._ready.set()

    async def next(self, timeout: float) -> dict[str, list[tuple[tuple[int, int], dict]]]:
        """New entries by stream, each as (`entry_key` of its id, its event), waiting up to
        `timeout` s for some ({} if none came)."""
        if not self._batches and self._failed is None:
            # A timer that sets the event, not `asyncio.timeout`: a timeout of 0 (the frame interval
            # already over) swallows a cancel that came before it (CPython gh-134471), and the socket's
            # pump, cancelled as it closed, then waited here for good with its viewer still counted.
            wake = asyncio.get_running_loop().call_later(timeout, self._ready.set)
            try:
                await self._ready.wait()
            finally:
                wake.cancel()
        if self._failed is not None:
            raise self._failed
        out: dict[str, list[tuple[tuple[int, int], dict]]] = {}
        while self._batches:
            stream, after, entries = self._batches.popleft()
            if stream not in self.last:
                continue  # no longer watched
            if after > self.last[stream]:  # the hub read on before this socket joined: catch up
                await self._catch_up(stream, after, out)
            last = self.last[stream]
            new = [(key, ev) for key, ev in entries if key > last]
            if new:
                if kept := self._first_copies(stream, new):
                    out.setdefault(stream, []).extend(kept)
                self.last[stream] = new[-1][0]
        self._ready.clear()  # after the catch-up reads too: batches put meanwhile are in `out`
        return out

    async def _catch_up(self, stream: str, upto: tuple[int, int], out: dict) -> None:
        last = self.last[stream]
        entries = await self.hub.redis.xrange(stream, min=entry_id(last), max=entry_id(upto))
        new = [(key, p.parse_event(fields)) for entry_id, fields in entries or ()
               if entry_id is not None and fields is not None and (key := entry_key(entry_id)) > last]
        if kept := self._first_copies(stream, new):
            out.setdefault(stream, []).extend(kept)
        self.last[stream] = upto  # anything between that is gone (trimmed, expired) stays gone

    def _first_copies(self, stream: str, entries: list) -> list:
        """`entries` less the events this subscription already had under another id (RECENT_EVENTS)."""
        recent = self.recent.setdefault(stream, {})
        kept = []
        for key, ev in entries:
            identity = (ev.get("type"), ev.get("t"), ev.get("n"), ev.get("text"))
            if identity in recent:
                continue
            recent[identity] = None
            if len(recent) > RECENT_EVENTS:
                del recent[next(iter(recent))]
            kept.append((key, ev))
        return kept

    def unwatch(self, streams: list[str]) -> None:
        """Stop following these streams (this socket has shown their end)."""
        self.hub.unwatch(self, streams)
        for stream in streams:
            self.last.pop(stream, None)
            self.recent.pop(stream, None)

    def close(self) -> None:
        self.unwatch(self.streams)


class StreamHub:
    """Follows every stream some socket of this loop watches, with one blocking XREAD at a
    time, and puts each new entry (parsed once) into the `Subscription` of each watcher.

    A stream the hub did not follow yet is read from the first watcher's replay position.
    The read in flight does not know a stream that was just added, so the hub also reads a
    wake stream of its own, which `subscribe` writes to (rather than waiting out the block).
    Redis restarts are ridden out by the pool's retries as for any command; if those give up,
    every subscription fails (its socket shows the interrupted notice) and the hub starts
    afresh with the next subscriber."""

    def __init__(self, redis: aioredis.Redis, block_ms: int = 5000):
        self.redis = redis
        self.block_ms = block_ms
        self.watchers: dict[str, set[Subscription]] = {}
        self.positions: dict[str, tuple[int, int]] = {}  # stream -> the last entry the hub has read
        self.wake_key = keys().ws_hub_wake(uuid.uuid4().hex)
        self.wake_id: EntryId = "0-0"
        self.task: asyncio.Task | None = None
        self.reads = 0  # XREADs made (tests, stats)

    async def subscribe(self, last_ids: Mapping[str, object]) -> Subscription:
        """Watch these streams; `last_ids`: the id of the last entry the caller has of each ("0": none)."""
        sub = Subscription(self, last_ids)
        added = False
        for stream, last in sub.last.items():
            if stream not in self.watchers:
                self.watchers[stream], self.positions[stream], added = set(), last, True
            elif self.positions[stream] > last:  # read and handed out before this one came: its catch-up
                sub.put(stream, self.positions[stream], [])  # comes now, not with the stream's next entry
            self.watchers[stream].add(sub)
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._follow(), name="arena-stream-hub")
        elif added:
            await self._wake()
        return sub

    def unwatch(self, sub: Subscription, streams: list[str]) -> None:
        for stream in streams:
            subs = self.watchers.get(stream)
            if subs is None:
                continue
            subs.discard(sub)
            if not subs:  # nobody watches it: the next read leaves it out
                del self.watchers[stream]
                self.positions.pop(stream, None)

    async def stop(self) -> None:
        """Nobody watches anything: let the read in flight end now rather than at its timeout."""
        task = self.task
        if task is None or task.done() or self.watchers:
            return
        try:
            await self._wake()
            await asyncio.wait({task}, timeout=1.0)
        except Exception:  # Redis gone: the read ends at its own timeout
            log.warning("Could not wake the stream hub to stop it")

    async def _wake(self) -> None:
        pipe = self.redis.pipeline(transaction=False)
        pipe.xadd(self.wake_key, {"w": "1"}, maxlen=1)
        pipe.expire(self.wake_key, 60)
        await pipe.execute()

    async def _follow(self) -> None:
        try:
            while self.watchers:
                reading: dict[str, EntryId] = {stream: entry_id(pos) for stream, pos in self.positions.items()}
                reading[self.wake_key] = self.wake_id
                # (The stubs want a dict[KeyT, StreamIdT], and dict is invariant: ours is a narrower one.)
                reply = await self.redis.xread(reading, block=self.block_ms,  # type: ignore[arg-type]
                                               count=HUB_READ_COUNT)
                assert not isinstance(reply, dict)  # a map in RESP3 only: ours speak RESP2, a list of [stream, entries]
                self.reads += 1
                for name, entries in reply or []:
                    stream = name.decode() if isinstance(name, bytes) else name
                    if stream == self.wake_key:
                        self.wake_id = entries[-1][0]
                        continue
                    subs = self.watchers.get(stream)
                    if not subs or not entries:
                        continue
                    parsed = [(entry_key(entry_id), p.parse_event(fields)) for entry_id, fields in entries]
                    if parsed[-1][0] > self.positions[stream]:
                        self.positions[stream] = parsed[-1][0]
                    after = entry_key(reading[stream])
                    for sub in list(subs):
                        sub.put(stream, after, parsed)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("The stream hub's read failed")
            for sub in {sub for subs in self.watchers.values() for sub in subs}:
                sub.fail(exc)
            self.watchers.clear()
            self.positions.clear()
