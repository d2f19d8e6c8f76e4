"""What the arena's WebSockets share.

`ArenaSocket`: the access check (an object the user may see, else close), the frame size
limit, the streaming task and its error frame. `StreamSocket` adds following generations'
Redis Streams for their owner: viewers counted in and out, a stop frame that cancels them,
a replay from the start (a late joiner or a reconnecting browser gets everything), then the
live entries from the process's `StreamHub` (arena/streams.py: one read per stream for
every socket watching it, over one connection pool), with no gap or duplicate between the
two; coalesced, at most one frame every ARENA_WS_FRAME_INTERVAL_MS (never holding back the
first entry after a pause nor an end), and the database's outcome for a stream that expired.
The generation page's socket (arena/playground) and a battle's (arena/battles) are
`StreamSocket`s that say how events become frames. Every `ArenaSocket` closes (4401) when the
session it was opened with logs out or its user is deactivated (arena/accounts/sockets.py), and
one over its user's cap of live sockets is closed (4429) with a message (arena/accounts/socket_cap.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from arena import access, streams
from arena.access import NotFound
from arena.accounts import socket_cap, sockets
from inference import protocol as p

from . import outcome, services

log = logging.getLogger(__name__)
MAX_CLIENT_FRAME = 4096  # a stop is 18 characters: a longer frame gets an error
# ...and one longer than this closes the socket with 1009 (message too big): a client sending
# such frames to a socket that only takes a stop is broken or hostile, and no reply is worth it.
MAX_FRAME_CHARS = 64 * 1024
FOLLOW_BLOCK_MS = 5000
INTERRUPTED = "Streaming was interrupted; reload the page to resume."
TEAMMATES_WORK = "This is a teammate's: you watch it as a member of its team, and only its owner and staff stop it."


def stop_frame_problem(text_data, bytes_data) -> str:
    """Why a client frame is not the one action clients may send, {"action": "stop"} ("" if it is)."""
    if bytes_data is not None or text_data is None or len(text_data) > MAX_CLIENT_FRAME:
        return "Frames must be JSON text under 4 KB."
    try:
        message = json.loads(text_data)
    except (ValueError, RecursionError):  # "[[[[..." 4 KB deep overflows the parser: it crashed the consumer
        return "Frames must be JSON."
    if not isinstance(message, dict) or message.get("action") != "stop":
        return 'Unknown action: the only action is {"action": "stop"}.'
    return ""


def frame_too_big(text_data, bytes_data) -> bool:
    return len(text_data if text_data is not None else bytes_data or b"") > MAX_FRAME_CHARS


class ArenaSocket(AsyncWebsocketConsumer):
    """Accept the user only for an object `subject_for` gives them; run `pump` until closed.

    Subclasses implement `subject_for` (sync, in a thread: the ORM), `pump` and `send_error`,
    and may add `opened` / `closed` / `received`."""

    REFUSED = 4404  # not yours or not there: the same answer

    async def connect(self):
        subject = await self._subject()
        if subject is None:
            await self.close(code=self.REFUSED)
            return
        await self.accept()
        slot = await socket_cap.slots().take(self.scope["user"].pk)
        if slot is None:  # accepted only to say why: `subject` unset, so `disconnect` has nothing to undo
            allowed = settings.ARENA_MAX_SOCKETS_PER_USER
            await self.send_error(socket_cap.too_many_message(allowed))
            await self.close(code=socket_cap.TOO_MANY, reason=socket_cap.too_many_reason(allowed))
            return
        self.slot, self.subject = slot, subject
        try:
            # Closed (4401) when its session logs out or its user is deactivated (arena/accounts/sockets.py).
            self.digests = sockets.scope_digests(self.scope)
            for digest in self.digests:
                sockets.registry().add(digest, self)
            await self.opened()
        except asyncio.CancelledError:
            # The server gave up on this socket while it opened (its close timed out on a loaded
            # machine): `disconnect` will never run, so what was taken is given back here.
            await asyncio.shield(self._release())
            raise
        self.pumping = asyncio.create_task(self._pump())

    async def disconnect(self, code):
        if getattr(self, "subject", None) is None:
            return  # refused: nothing was opened
        # Shielded: a server that cancels the consumer while it closes (a close timeout) must not
        # leave its socket slot taken or its viewers counted in for good.
        await asyncio.shield(self._release())

    async def _release(self) -> None:
        await socket_cap.slots().release(self.slot)
        for digest in getattr(self, "digests", ()):
            await sockets.registry().remove(digest, self)
        pumping = getattr(self, "pumping", None)  # None if `opened` failed
        if pumping is not None:
            await streams.stop_task(pumping, f"The pump of {type(self).__name__} for {self.subject}")
        await self.closed()

    async def receive(self, text_data=None, bytes_data=None):
        """A frame too big to be anything we take closes the socket; the rest is `received`'s."""
        if frame_too_big(text_data, bytes_data):
            return await self.close(code=1009)
        await self.received(text_data, bytes_data)

    # --- hooks ------------------------------------------------------------------------
    def subject_for(self, user, url_kwargs: dict) -> Any:
        """The object this socket serves if `user` may see it, else None or NotFound (runs in a thread)."""
        raise NotImplementedError

    async def pump(self) -> None:
        raise NotImplementedError

    async def send_error(self, message: str) -> None:
        raise NotImplementedError

    async def opened(self) -> None:
        """Accepted; the pump starts next."""

    async def closed(self) -> None:
        """The pump has stopped (or `opened` failed part way)."""

    async def received(self, text_data, bytes_data) -> None:
        """A client frame of acceptable size; ignored unless a subclass takes it."""

    # --- internals --------------------------------------------------------------------
    @database_sync_to_async
    def _subject(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            return None
        try:
            return self.subject_for(user, self.scope["url_route"]["kwargs"])
        except NotFound:
            return None

    async def _pump(self) -> None:
        try:
            await self.pump()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s for %s failed", type(self).__name__, self.subject)
            await self.send_error(INTERRUPTED)


class StreamSocket(ArenaSocket):
    """Follows the Redis Streams of `generations()` for their owner, who may stop them.

    Subclasses implement `send_snapshot` (one stream's replay; returns the id to follow from),
    `send_events` (new events of one stream; or `send_batch` for several streams in one
    frame), `stream_ended`, `send_stored` (a generation as the database has it) and
    `send_error`; `followed` runs once every stream has ended."""

    async def opened(self) -> None:
        self.shared = streams.shared()
        self.redis = self.shared.acquire()  # the loop's pooled client: never closed by a socket
        self.keys = streams.keys()
        self.by_stream = {self.keys.stream(str(gen.id)): gen for gen in self.generations()}
        self.joined: list[str] = []  # counted in as a viewer: to be counted out, and only those
        # Shielded: cancelled after Redis counted a join but before its reply, the socket would not
        # know to count itself out. `closed` waits for it, so every join has its leave.
        self.joining = asyncio.ensure_future(self._join_all())
        await asyncio.shield(self.joining)

    async def _join_all(self) -> None:
        for gen in self.by_stream.values():
            await streams.viewer_joined(self.redis, str(gen.id))
            self.joined.append(str(gen.id))

    async def closed(self) -> None:
        if not hasattr(self, "shared"):
            return
        try:
            joining = getattr(self, "joining", None)
            if joining is not None:
                await asyncio.wait({joining})
            for gen_id in getattr(self, "joined", []):
                await streams.viewer_left(self.redis, gen_id)
        finally:
            await self.shared.release()

    async def received(self, text_data, bytes_data) -> None:
        """Clients may only ask to stop; anything else gets an error, never a crash."""
        problem = stop_frame_problem(text_data, bytes_data)
        if problem:
            return await self.send_error(problem)
        if not access.may_change(self.scope["user"], self.subject):
            return await self.send_error(TEAMMATES_WORK)
        await services.acancel([gen.id for gen in self.by_stream.values()], "user")
        await self.stopping()

    async def pump(self) -> None:
        last_ids = {stream: await self.send_snapshot(stream) for stream in self.by_stream}
        live = {stream: last_id for stream, last_id in last_ids.items() if not self.stream_ended(stream)}
        if live:
            subscription = await self.shared.hub.subscribe(live)
            try:
                await self._follow(subscription)
            finally:
                subscription.close()
        await self.followed()

    async def _follow(self, subscription: streams.Subscription) -> None:
        """Send what the hub brings until every stream has ended: at most one frame every
        `interval`, except that the first events after a quiet `interval` and an end go at once."""
        loop = asyncio.get_running_loop()
        interval = settings.ARENA_WS_FRAME_INTERVAL_MS / 1000
        pending: dict[str, list[dict]] = {}
        sent_at = -math.inf
        while True:
            if ended := [s for s in subscription.streams if s not in pending and self.stream_ended(s)]:
                subscription.unwatch(ended)
            if not subscription.streams:
                return
            wait = max(0.0, sent_at + interval - loop.time()) if pending else FOLLOW_BLOCK_MS / 1000
            batches = await subscription.next(wait)
            for stream, entries in batches.items():
                pending.setdefault(stream, []).extend(ev for _key, ev in entries)
            if pending:
                ending = any(ev["type"] in p.TERMINAL_EVENTS for entries in batches.values() for _key, ev in entries)
                if ending or loop.time() - sent_at >= interval:
                    await self.send_batch(pending)
                    pending, sent_at = {}, loop.time()
            elif not batches:
                await self._catch_expired(subscription.streams)

    async def _catch_expired(self, live) -> None:
        """A stream that is gone (expired, or never written): the database may have the outcome."""
        for stream in live:
            if not await self.redis.exists(stream) and (gen := await self.stored(stream)) is not None:
                await self.send_stored(stream, gen)

    async def stored(self, stream: str):
        """The stream's generation as the database has it if it has finished, else None: what to
        show once its stream is gone (arena/generations/outcome.py)."""
        return await outcome.astored(self.by_stream[stream].id)

    # --- hooks ------------------------------------------------------------------------
    def generations(self) -> list:
        """The generations of `self.subject` this socket follows."""
        raise NotImplementedError

    async def send_snapshot(self, stream: str) -> streams.EntryId:
        """Show the stream so far (`streams.replay`); returns the id of its last entry ("0": none)."""
        raise NotImplementedError

    async def send_events(self, stream: str, events: list[dict]) -> None:
        raise NotImplementedError

    async def send_batch(self, batch: dict[str, list[dict]]) -> None:
        """New events of one or more streams, due in one frame (by default one per stream)."""
        for stream, events in batch.items():
            await self.send_events(stream, events)

    def stream_ended(self, stream: str) -> bool:
        """Whether the stream's generation has ended as far as this socket has shown."""
        raise NotImplementedError

    async def send_stored(self, stream: str, gen) -> None:
        """Show the generation as stored; from then on `stream_ended(stream)` must be true."""
        raise NotImplementedError

    async def stopping(self) -> None:
        """The user asked to stop (the cancel keys are set)."""

    async def followed(self) -> None:
        """Every stream has ended."""
