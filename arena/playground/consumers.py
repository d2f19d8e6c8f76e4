"""The WebSocket that streams a generation to its owner's browser.

It replays the generation's Redis Stream from the start (a late joiner or a
reconnecting browser gets the whole answer), then follows it live. Frames are
HTML fragments for htmx by default, or JSON events with `?format=json`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from arena import streams
from arena.generations.models import Generation
from inference import protocol as p

from . import fragments

log = logging.getLogger(__name__)
MAX_CLIENT_FRAME = 4096  # a stop is 18 characters: a longer frame gets an error
# ...and one longer than this closes the socket with 1009 (message too big): a client sending
# such frames to a socket that only takes a stop is broken or hostile, and no reply is worth it.
MAX_FRAME_CHARS = 64 * 1024
FOLLOW_BLOCK_MS = 5000


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


async def stop_pump(pump: asyncio.Task | None) -> None:
    """Cancel a consumer's streaming task and wait for it; closing a socket must not raise."""
    if pump is None:
        return
    pump.cancel()
    try:
        await pump
    except (asyncio.CancelledError, Exception):
        pass  # the pump logs its own failures


class GenerationConsumer(AsyncWebsocketConsumer):
    # Reads Redis directly and takes nothing from the channel layer: not subscribing to it spares a
    # Redis pop per socket, and a Redis restart no longer kills the socket from inside Channels.
    channel_layer_alias = None

    async def connect(self):
        self.gen = await self._get_generation()
        if self.gen is None:
            await self.close(code=4404)  # not yours or not there: the same answer
            return
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.as_json = query.get("format") == ["json"]
        self.keys = streams.keys()
        self.redis = streams.async_client()
        self.created_at = self.gen.created_at.timestamp()
        await self.accept()
        await self._viewer_joined()
        self.pump = asyncio.create_task(self._pump())

    async def disconnect(self, code):
        await stop_pump(getattr(self, "pump", None))
        if getattr(self, "redis", None):
            await self._viewer_left()
            await self.redis.aclose()

    async def receive(self, text_data=None, bytes_data=None):
        """Clients may only ask to stop; anything else gets an error, never a crash."""
        if frame_too_big(text_data, bytes_data):
            return await self.close(code=1009)
        problem = stop_frame_problem(text_data, bytes_data)
        if problem:
            return await self._send_error(problem)
        await self.redis.set(self.keys.cancel(str(self.gen.id)), "user", ex=p.STREAM_TTL_S)
        if not self.as_json:
            await self.send(text_data=fragments.status("running", "stopping…"))

    # --- streaming --------------------------------------------------------------------
    async def _pump(self):
        stream = self.keys.stream(str(self.gen.id))
        try:
            last_id, finished = await self._send_snapshot(stream)
            while not finished:
                reply = await self.redis.xread({stream: last_id}, block=FOLLOW_BLOCK_MS, count=200)
                for _name, entries in reply or []:
                    for entry_id, fields in entries:
                        last_id = entry_id
                        ev = p.parse_event(fields)
                        await self._send_event(ev)
                        finished = finished or ev["type"] in p.TERMINAL_EVENTS
                if not reply and not await self.redis.exists(stream):
                    finished = await self._finished_in_db()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("Streaming generation %s failed", self.gen.id)
            await self._send_error("Streaming was interrupted; reload the page to resume.")

    async def _send_snapshot(self, stream: str) -> tuple[str, bool]:
        """Everything so far in one go, then the caller follows from the last entry."""
        entries = await self.redis.xrange(stream)
        events = [p.parse_event(fields) for _id, fields in entries]
        last_id = entries[-1][0] if entries else "0"
        if not events:
            gen = await self._refresh()
            if gen.finished:  # the stream expired: the database has the outcome
                await self._send_stored(gen)
                return last_id, True
        if self.as_json:
            for ev in events:
                await self._send_event(ev)
        else:
            await self.send(text_data=self._snapshot_html(events))
        return last_id, any(ev["type"] in p.TERMINAL_EVENTS for ev in events)

    def _snapshot_html(self, events: list[dict]) -> str:
        tokens = [ev for ev in events if ev["type"] == p.TOKEN]
        text = "".join(ev.get("text", "") for ev in tokens)
        parts = [fragments.output_replace(text, tokens[-1].get("n", 0) if tokens else 0), fragments.controls(True)]
        state = "queued"
        for ev in events:
            if ev["type"] in (p.LOADING, p.STARTED):
                parts.append(fragments.for_event(ev, self.created_at))
                state = ev["type"]
            elif ev["type"] in p.TERMINAL_EVENTS:
                parts.append(fragments.final(ev, self.created_at))
                state = ev["type"]
        if state == "queued":
            parts.append(fragments.status("queued"))
        return "".join(parts)

    async def _send_event(self, ev: dict):
        if self.as_json:
            await self.send(text_data=json.dumps(ev))
        else:
            html = fragments.for_event(ev, self.created_at)
            if html:
                await self.send(text_data=html)

    async def _send_stored(self, gen: Generation):
        if self.as_json:
            await self.send(text_data=json.dumps({"type": gen.status, "text": gen.text, "reason": gen.failure_reason}))
            return
        await self.send(text_data=fragments.stored(gen))

    async def _send_error(self, message: str):
        if self.as_json:
            await self.send(text_data=json.dumps({"type": "error", "message": message}))
        else:
            await self.send(text_data=fragments.error(message))

    async def _viewer_joined(self):
        await streams.viewer_joined(self.redis, str(self.gen.id))

    async def _viewer_left(self):
        await streams.viewer_left(self.redis, str(self.gen.id))

    # --- database -----------------------------------------------------------------------
    @database_sync_to_async
    def _get_generation(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            return None
        gen_id = self.scope["url_route"]["kwargs"]["generation_id"]
        return Generation.objects.visible().filter(id=gen_id, owner=user).first()

    @database_sync_to_async
    def _refresh(self) -> Generation:
        self.gen.refresh_from_db()
        return self.gen

    async def _finished_in_db(self) -> bool:
        gen = await self._refresh()
        if gen.finished:
            await self._send_stored(gen)
        return gen.finished
