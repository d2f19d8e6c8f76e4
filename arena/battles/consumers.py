"""The WebSocket of a battle: both answers, streamed side by side to the owner's browser.

A `StreamSocket` (arena/generations/consumers.py) over both generations' Redis Streams:
each replayed from the start (a reconnecting browser gets everything), then both followed
live through the server process's stream hub (arena/streams.py). Frames are htmx
out-of-band fragments; a blind battle's carry no names, speeds or failure details, and are
paced: the socket sends what `Pacer` shows on Redis's clock (arena/battles/pacing.py), both
sides in one frame, never the events as they come.
"""

from __future__ import annotations

import asyncio
import time

from channels.db import database_sync_to_async
from django.utils.html import format_html

from arena import streams
from arena.generations.consumers import FOLLOW_BLOCK_MS, StreamSocket
from arena.playground import fragments as playground
from inference import protocol as p

from . import delivery, fragments
from .access import access_battle
from .pacing import SideView
from .voting import vote_refusal_for

METRICS_EVERY_S = 0.25  # live speed figures and chart, at most this often per side


class BattleConsumer(StreamSocket):
    def subject_for(self, user, url_kwargs: dict):
        return access_battle(user, url_kwargs["battle_id"], change=False)  # a teammate watches (`received`: who stops)

    async def opened(self) -> None:
        await super().opened()
        battle, created = self.subject, self.subject.created_at.timestamp()
        self.views = {self.keys.stream(str(gen.id)): fragments.Side(name, created, not battle.names_visible)
                      for name, gen in battle.sides}
        self.metrics_at = dict.fromkeys(self.views, 0.0)

    async def pump(self) -> None:
        if self.subject.paced:
            await self.pump_paced()
        else:
            await super().pump()

    async def pump_paced(self) -> None:
        """Replay both streams into a pacer, then follow them through the process's hub
        (arena/streams.py); send what the pacer shows each time that changes."""
        pacer, names = delivery.new_pacer(), list(self.by_stream)
        last_ids: dict[str, streams.EntryId] = dict.fromkeys(names, "0")
        for side, name in enumerate(names):
            entries = await streams.replay(self.redis, name)
            delivery.feed(pacer, side, entries)
            if entries:
                last_ids[name] = entries[-1][0]
        offset = delivery.redis_time(await self.redis.time()) - time.time()  # Redis's clock, read locally
        if all(v == "0" for v in last_ids.values()) and await self._expired(names):
            return await self.followed()
        subscription = await self.shared.hub.subscribe(
            {name: last_ids[name] for side, name in enumerate(names) if not pacer.sides[side].ended})
        try:
            await self._pace(pacer, names, offset, subscription)
        finally:
            subscription.close()

    async def _pace(self, pacer, names: list[str], offset: float, subscription) -> None:
        shown: list[SideView] | None = None
        while True:
            now = time.time() + offset
            views = pacer.view(now)
            frame = fragments.paced_frame(list(self.views.values()), shown, views)
            if frame:
                await self.send(text_data=frame)
            shown = views
            if all(v.ended for v in views):
                return await self.followed()
            wake = pacer.next_change(now)
            wait_ms = FOLLOW_BLOCK_MS if wake is None else min(FOLLOW_BLOCK_MS, max(1, int((wake - now) * 1000) + 1))
            if ended := [name for name in subscription.streams if pacer.sides[names.index(name)].ended]:
                subscription.unwatch(ended)
            if not subscription.streams:  # every event is in: only the clock moves the view now
                await asyncio.sleep(wait_ms / 1000)
                continue
            batches = await subscription.next(wait_ms / 1000)
            for stream, entries in batches.items():
                for key, ev in entries:  # an entry's time is its id: Redis's clock when it was written
                    pacer.add(names.index(stream), key[0] / 1000, ev)
            if not batches and wait_ms >= FOLLOW_BLOCK_MS and await self._expired(names):
                return await self.followed()

    async def _expired(self, names: list[str]) -> bool:
        """Streams gone and the database has both outcomes: show them as stored."""
        if await self.redis.exists(*names):
            return False
        gens = [await self.stored(name) for name in names]
        if any(gen is None for gen in gens):
            return False
        for name, gen in zip(names, gens, strict=True):
            await self.send_stored(name, gen)
        return True

    def generations(self) -> list:
        return [gen for _name, gen in self.subject.sides]

    def stream_ended(self, stream: str) -> bool:
        return self.views[stream].finished

    async def send_snapshot(self, stream: str) -> streams.EntryId:
        """One side so far in one frame; returns the id to follow from."""
        view = self.views[stream]
        entries = await streams.replay(self.redis, stream)
        if not entries:
            gen = await self.stored(stream)
            if gen is not None:  # the stream expired: the database has the outcome
                await self.send_stored(stream, gen)
            else:
                await self.send(text_data=fragments.status(view.name, "queued"))
            return "0"
        events = [self._track(view, p.parse_event(fields)) for _id, fields in entries]
        await self._note_waits(stream, events)
        text = p.streamed_text(events)
        parts = [fragments.output_replace(view.name, text)]
        parts += [self._event_html(stream, view, ev) for ev in events
                  if ev["type"] in (p.QUEUED, p.LOADING, p.STARTED) or ev["type"] in p.TERMINAL_EVENTS]
        if not view.finished:
            parts.append(fragments.metrics(view))
        await self.send(text_data="".join(parts))
        return entries[-1][0]

    async def send_events(self, stream: str, events: list[dict]) -> None:
        await self.send_batch({stream: events})

    async def send_batch(self, batch: dict[str, list[dict]]) -> None:
        """Both sides' new events in one frame."""
        for stream, events in batch.items():
            await self._note_waits(stream, events)
        await self.send(text_data="".join(self._events_html(stream, events) for stream, events in batch.items()))

    def _events_html(self, stream: str, events: list[dict]) -> str:
        view = self.views[stream]
        html = [self._event_html(stream, view, self._track(view, ev)) for ev in events]
        # A blind side's metrics never change ("shown at the reveal"): sent with its snapshot only.
        if not view.finished and not view.blind and time.monotonic() - self.metrics_at[stream] >= METRICS_EVERY_S:
            html.append(fragments.metrics(view))
            self.metrics_at[stream] = time.monotonic()
        return "".join(html)

    def _event_html(self, stream: str, view: fragments.Side, ev: dict) -> str:
        """An event's fragments; a named side's finished answer also says whether it follows its
        JSON schema or regex (the page showed that only once reloaded)."""
        html = fragments.for_event(view, ev)
        if ev["type"] == p.DONE and not view.blind:
            gen = self.by_stream[stream]
            html += fragments.validity(view.name, gen.params, gen.verdict(ev.get("text", "")))
        return html

    async def _note_waits(self, stream: str, events: list[dict]) -> None:
        """A named side ending now shows its wait in line and for its model with its figures, as the
        page does once reloaded (the run recorded them since the socket opened)."""
        view = self.views[stream]
        end = next((ev for ev in events if ev["type"] in p.TERMINAL_EVENTS), None)
        if end is not None and not view.blind:
            view.waits = await self._waits(self.by_stream[stream], end.get("metrics") or {})

    @database_sync_to_async
    def _waits(self, gen, metrics: dict) -> dict:
        gen.refresh_from_db(fields=["admitted_at", "load_wait_s", "queue_wait_s"])  # not the loaded model
        return playground.waits(gen, metrics)

    @staticmethod
    def _track(view: fragments.Side, ev: dict) -> dict:
        if ev["type"] == p.TOKEN:
            view.token(ev)
        return ev

    async def send_stored(self, stream: str, gen) -> None:
        await self.send(text_data=fragments.stored(self.views[stream], gen))

    async def followed(self) -> None:
        """Both answers have ended: the vote opens (a tournament match's pick follows the sides'
        states in CSS) and the Stop button goes."""
        # The streams' outcomes, not the rows: the battle task may not have stored them yet.
        outcomes = [view.state if view.finished else None for view in self.views.values()]
        refusal = vote_refusal_for(outcomes, self.subject.mode)
        buttons = fragments.verdict_open(refusal, blind=not self.subject.names_visible, stopped="cancelled" in outcomes)
        await self.send(text_data=buttons + fragments.STOP_GONE)

    async def send_error(self, message: str) -> None:
        await self.send(text_data=format_html('<div id="battle-notice" class="notice">{}</div>', message))
