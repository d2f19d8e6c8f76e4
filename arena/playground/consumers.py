"""The WebSocket that streams a generation to its owner's browser (a `StreamSocket`: the
replay, the live follow and the stop come from arena/generations/consumers.py). Frames are
HTML fragments for htmx by default (the events that came together in one frame), or JSON
events with `?format=json` (one event a frame)."""

from __future__ import annotations

import json
from functools import cached_property, lru_cache
from urllib.parse import parse_qs

from channels.db import database_sync_to_async

from arena import access, streams
from arena.generations import outcome, readiness
from arena.generations.access import access_generation
from arena.generations.consumers import StreamSocket
from arena.generations.models import Generation
from inference import protocol as p

from . import fragments

# The generation's status while its recent-list line follows it, by the event that moves it on.
LIVE_STATUS = {p.LOADING: Generation.Status.LOADING, p.STARTED: Generation.Status.RUNNING}


@lru_cache(maxsize=4096)
def token_html(text: str, n: int) -> str:
    """A token's fragment, made once for every socket of the process watching its generation."""
    return fragments.output_append(text, n)


class GenerationConsumer(StreamSocket):
    def subject_for(self, user, url_kwargs: dict):
        return access_generation(user, url_kwargs["generation_id"], change=False)  # a teammate watches

    @cached_property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(self.scope.get("query_string", b"").decode())

    @cached_property
    def as_json(self) -> bool:
        """Known before `opened`: a refusal at the handshake (too many sockets) is sent in the client's format too."""
        return self.query.get("format") == ["json"]

    @cached_property
    def in_recent_list(self) -> bool:
        """The playground page asks (`?recent=1`): its recent list shows this generation, whose
        state the outcome's frame updates there too."""
        return self.query.get("recent") == ["1"]

    def recent_item(self) -> str:
        """This generation's line in the playground's recent list as `listed` has it ("" if not asked)."""
        return fragments.recent_item(self.listed) if self.in_recent_list else ""

    async def opened(self) -> None:
        self.created_at = self.subject.created_at.timestamp()
        self.ended = False  # the stream's outcome has been shown
        self.stoppable = access.may_change(self.scope["user"], self.subject)  # a teammate gets no Stop
        self.listed, self.withheld = await self._read_state()
        await super().opened()

    @database_sync_to_async
    def _read_state(self) -> tuple[dict, bool]:
        """In a thread: its recent-list line (its URL's `reverse` may load the URLconf, too slow for
        the event loop the process's other sockets share) and whether its owner's blind verdict is
        pending (no loading frames, no waits: arena/generations/readiness.py)."""
        return fragments.recent_entry(self.subject), self.subject.readiness_withheld()

    def generations(self) -> list[Generation]:
        return [self.subject]

    def stream_ended(self, stream: str) -> bool:
        return self.ended

    async def stopping(self) -> None:
        if not self.as_json:
            await self.send(text_data=fragments.status("running", "stopping…"))

    async def send_snapshot(self, stream: str) -> streams.EntryId:
        """Everything so far in one go; the follow goes on from the last entry."""
        entries = await streams.replay(self.redis, stream)
        events = self.shown([p.parse_event(fields) for _id, fields in entries])
        last_id = entries[-1][0] if entries else "0"
        if not events and (gen := await self.stored(stream)) is not None:  # the stream expired
            await self.send_stored(stream, gen)
            return last_id
        if self.as_json:
            for ev in events:
                await self.send(text_data=json.dumps(ev))
        else:
            if any(ev["type"] in p.TERMINAL_EVENTS for ev in events):
                await self.refresh_waits()
            await self.send(text_data=self._snapshot_html(events))
        self.ended = any(ev["type"] in p.TERMINAL_EVENTS for ev in events)
        return last_id

    def _snapshot_html(self, events: list[dict]) -> str:
        tokens = [ev for ev in events if ev["type"] == p.TOKEN]
        text = p.streamed_text(tokens)
        parts = [fragments.output_replace(text, tokens[-1].get("n", 0) if tokens else 0),
                 fragments.controls(self.stoppable)]
        shown = ended = False
        for ev in events:
            if ev["type"] in (p.QUEUED, p.LOADING, p.STARTED):
                parts.append(self._progress(ev, with_line=False))
                shown = True
            elif ev["type"] in p.TERMINAL_EVENTS:
                parts.append(self._final(ev))
                shown = ended = True
        if not shown:
            parts.append(fragments.status("queued"))
        if not ended:  # the recent list's line as the replay left it (an ended one came with its end)
            parts.append(self.recent_item())
        return "".join(parts)

    def shown(self, events: list[dict]) -> list[dict]:
        """The events as this generation's viewers may have them: while its owner's blind verdict is
        pending, no LOADING (a cold model's only difference from a warm one), no queue time, no raw times."""
        if not self.withheld:
            return events
        if not self.as_json:  # the page's fragments show no raw time; its waits come from `fragments.waits`
            return [ev for ev in events if ev["type"] != p.LOADING]
        return [shown for ev in events if (shown := readiness.redact_event(ev)) is not None]

    async def send_events(self, stream: str, events: list[dict]) -> None:
        """HTML: every event's fragments in one frame (htmx swaps them in order); JSON: a frame per event."""
        events = self.shown(events)
        ending = any(ev["type"] in p.TERMINAL_EVENTS for ev in events)
        self.ended = self.ended or ending
        if self.as_json:
            for ev in events:
                await self.send(text_data=json.dumps(ev))
        else:
            if ending:
                await self.refresh_waits()
            html = "".join(token_html(ev.get("text", ""), ev.get("n", 0)) if ev["type"] == p.TOKEN
                           else self._final(ev) if ev["type"] in p.TERMINAL_EVENTS
                           else self._progress(ev) for ev in events)
            if html:
                await self.send(text_data=html)

    @database_sync_to_async
    def refresh_waits(self) -> None:
        """The waits the run recorded since the page opened, for the outcome's figures (only these
        fields: a whole refresh would drop the model the frames name)."""
        self.subject.refresh_from_db(fields=["admitted_at", "load_wait_s", "queue_wait_s"])
        self.withheld = self.subject.readiness_withheld(fresh=True)  # a vote since may have revealed the match

    def _progress(self, ev: dict, with_line: bool = True) -> str:
        """A loading or started event's fragments; the recent list's line follows ("Queued" there
        while the answer above already streams would say two things at once)."""
        html = fragments.for_event(ev, self.created_at)
        if ev["type"] in LIVE_STATUS:
            self.listed["status"] = LIVE_STATUS[ev["type"]]
            html += self.recent_item() if with_line else ""
        return html

    def _final(self, ev: dict) -> str:
        """The outcome's fragments, with whether a finished answer follows its schema or regex."""
        verdict = self.subject.verdict(ev.get("text", "")) if ev["type"] == p.DONE else None
        html = fragments.final(ev, self.created_at, self.subject) + fragments.validity(self.subject.params, verdict)
        self.listed.update(fragments.ending(ev, self.subject.params))  # its line says how it ended
        return html + self.recent_item()

    async def send_stored(self, stream: str, gen: Generation) -> None:
        self.ended = True
        if self.as_json:
            await self.send(text_data=json.dumps(outcome.terminal_event(gen)))  # as its stream would have ended
        else:
            self.listed.update(status=gen.status, finish_reason=gen.finish_reason, params=gen.params,
                               generated_tokens=gen.generated_tokens)
            await self.send(text_data=fragments.stored(gen, stoppable=self.stoppable) + self.recent_item())

    async def send_error(self, message: str) -> None:
        if self.as_json:
            await self.send(text_data=json.dumps({"type": "error", "message": message}))
        else:
            await self.send(text_data=fragments.error(message))
