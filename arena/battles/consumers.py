"""The WebSocket of a battle: both answers, streamed side by side to the owner's browser.

One socket follows both generations' Redis Streams with one read, replaying each from
the start (a reconnecting browser gets everything) and then live. Frames are htmx
out-of-band fragments; a blind battle's carry no names, speeds or failure details.
"""

from __future__ import annotations

import asyncio
import logging
import time

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.utils.html import format_html

from arena import streams
from arena.playground.consumers import frame_too_big, stop_frame_problem, stop_pump
from inference import protocol as p

from . import fragments
from .models import Battle

log = logging.getLogger(__name__)
FOLLOW_BLOCK_MS = 5000
METRICS_EVERY_S = 0.25  # live speed figures and chart, at most this often per side


class BattleConsumer(AsyncWebsocketConsumer):
    # Reads Redis directly and takes nothing from the channel layer: not subscribing to it spares a
    # Redis pop per socket, and a Redis restart no longer kills the socket from inside Channels.
    channel_layer_alias = None

    async def connect(self):
        self.battle = await self._get_battle()
        if self.battle is None:
            await self.close(code=4404)  # not yours or not there: the same answer
            return
        self.redis = streams.async_client()
        self.keys = streams.keys()
        created = self.battle.created_at.timestamp()
        self.sides = {
            self.keys.stream(str(gen.id)): (fragments.Side(name, created, not self.battle.names_visible), gen)
            for name, gen in self.battle.sides
        }
        await self.accept()
        for _view, gen in self.sides.values():
            await streams.viewer_joined(self.redis, str(gen.id))
        self.pump = asyncio.create_task(self._pump())

    async def disconnect(self, code):
        await stop_pump(getattr(self, "pump", None))
        if getattr(self, "redis", None):
            for _view, gen in self.sides.values():
                await streams.viewer_left(self.redis, str(gen.id))
            await self.redis.aclose()

    async def receive(self, text_data=None, bytes_data=None):
        """Clients may only ask to stop both sides; anything else gets an error, never a crash."""
        if frame_too_big(text_data, bytes_data):
            return await self.close(code=1009)
        problem = stop_frame_problem(text_data, bytes_data)
        if problem:
            return await self._notice(problem)
        for _view, gen in self.sides.values():
            await self.redis.set(self.keys.cancel(str(gen.id)), "user", ex=p.STREAM_TTL_S)

    # --- streaming --------------------------------------------------------------------
    async def _pump(self):
        try:
            last_ids = {stream: await self._send_snapshot(stream) for stream in self.sides}
            metrics_at = {stream: 0.0 for stream in self.sides}
            while live := {s: last_ids[s] for s, (view, _gen) in self.sides.items() if not view.finished}:
                reply = await self.redis.xread(live, block=FOLLOW_BLOCK_MS, count=200)
                for name, entries in reply or []:
                    stream = name.decode()
                    view, _gen = self.sides[stream]
                    html = []
                    for entry_id, fields in entries:
                        last_ids[stream] = entry_id
                        html.append(fragments.for_event(view, self._track(view, p.parse_event(fields))))
                    # A blind side's metrics never change ("shown at the reveal"): sent with its snapshot only.
                    due = time.monotonic() - metrics_at[stream] >= METRICS_EVERY_S
                    if due and not view.finished and not view.blind:
                        html.append(fragments.metrics(view))
                        metrics_at[stream] = time.monotonic()
                    await self.send(text_data="".join(html))
                if not reply:
                    await self._catch_expired(live)
            # The streams' outcomes, not the rows: the battle task may not have stored them yet.
            votable = all(view.state == "done" for view, _gen in self.sides.values())
            await self.send(text_data=fragments.verdict_open(votable))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("Streaming battle %s failed", self.battle.id)
            await self._notice("Streaming was interrupted; reload the page to resume.")

    @staticmethod
    def _track(view: fragments.Side, ev: dict) -> dict:
        if ev["type"] == p.TOKEN:
            view.token(ev)
        return ev

    async def _send_snapshot(self, stream: str) -> str:
        """One side so far in one frame; returns the id to follow from."""
        view, gen = self.sides[stream]
        entries = await self.redis.xrange(stream)
        if not entries:
            gen = await self._refresh(gen)
            if gen.finished:  # the stream expired: the database has the outcome
                await self.send(text_data=fragments.stored(view, gen))
            else:
                await self.send(text_data=fragments.status(view.name, "queued"))
            return "0"
        events = [self._track(view, p.parse_event(fields)) for _id, fields in entries]
        text = "".join(ev.get("text", "") for ev in events if ev["type"] == p.TOKEN)
        parts = [fragments.output_replace(view.name, text)]
        for ev in events:
            if ev["type"] in (p.LOADING, p.STARTED) or ev["type"] in p.TERMINAL_EVENTS:
                parts.append(fragments.for_event(view, ev))
        if not view.finished:
            parts.append(fragments.metrics(view))
        await self.send(text_data="".join(parts))
        return entries[-1][0]

    async def _catch_expired(self, live: dict) -> None:
        """A side whose stream is gone (expired, or never written): take its outcome from the database."""
        for stream in live:
            if not await self.redis.exists(stream):
                view, gen = self.sides[stream]
                gen = await self._refresh(gen)
                if gen.finished:
                    await self.send(text_data=fragments.stored(view, gen))

    async def _notice(self, message: str):
        await self.send(text_data=format_html('<div id="battle-notice" class="notice">{}</div>', message))

    # --- database -----------------------------------------------------------------------
    @database_sync_to_async
    def _get_battle(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            return None
        battle_id = self.scope["url_route"]["kwargs"]["battle_id"]
        return Battle.objects.select_related("left__model", "right__model").filter(id=battle_id, owner=user).first()

    @database_sync_to_async
    def _refresh(self, gen):
        gen.refresh_from_db()
        return gen
