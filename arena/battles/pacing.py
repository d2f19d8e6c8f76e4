"""Paced delivery of a blind battle: what each side shows, released on one clock.

Sent as generated, a blind match gives its contestants away by their rhythm: a llama.cpp
or speculative variant streams several times faster than its full-precision twin,
speculative decoding arrives in bursts of accepted tokens, and token boundaries differ by
tokenizer. So a blind battle's viewers never see the raw streams; they see this pure
function of them (no I/O, no wall clock: times come in as arguments, which keeps every
viewer, the API and the vote check in agreement and the rule testable with a fake clock):

- Each side's text is cut into word-sized pieces by its characters alone (a run of
  whitespace and up to `MAX_PIECE` following non-space characters), never by tokens.
- Blind to the last word: piece k of every side that has one is released in the same
  instant, `release[k]`, and the releases keep ONE gap, `pace`, from the first piece to the
  last, the same before and after the shorter answer ends: a side's own speed shows in no
  stretch of the delivery (a longer answer left alone once went on at the slow model's own
  speed, one piece every 0.19 s after 0.10 s together, which named it).
- The pace is chosen once, before the first piece: the release begins when every side still
  writing has written `PROBE` pieces (or has ended), and the pace is the fixed one
  (`words_per_s`) if every such side's measured rate (its first `PROBE` pieces' gaps) keeps
  up with it with `MARGIN` in hand, else it drops, for both sides, to the slowest side's measured gap over `MARGIN`.
  A side that keeps its measured rate then writes ahead of the release for an answer of any
  length (the remaining length is bounded by nothing the viewers know: they read only the
  streams, so the rule sustains the pace to max_new_tokens and beyond); a side that has
  ended has every piece out already and constrains nothing.
- Never a piece before it exists (a piece is complete when a character follows it or its
  side has ended): when a side falls behind the pace after all (its machine got busier), the
  release holds, for both, until every side still writing has `RESUME_S` seconds of the pace
  (at least `PROBE` pieces) written ahead or has ended, then goes on at the same pace. A
  hold is one longer gap, never a stretch at the side's new speed.
- Every release time depends only on events at or before it, and each side's choice only on
  its own stream: a view at a moment never changes when later events come, and every reader
  (each socket, the API, the vote check) computes the same one.
- A side shows as ended only when its last piece is out (a cancelled side, when it was
  cancelled: with only the pieces out by then), and never before both sides show as running.

Times are seconds on one server clock: the Redis stream entry ids of the events.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from inference import protocol as p

MAX_PIECE = 12  # characters of a word shown at once: a long word or unspaced script is cut
PIECE = re.compile(rf"\s*\S{{1,{MAX_PIECE}}}")
# The release begins once every side still writing has written PROBE pieces: their gaps
# measure its pace. The pace keeps MARGIN of the slowest side's measured rate in hand.
PROBE = 5
MARGIN = 0.8
# After a side falls behind the pace (its machine got busier), the release holds until
# every side has this many seconds of the pace written ahead, then goes on at the same pace.
RESUME_S = 1.0
ENDED_STATE = {p.DONE: "done", p.FAILED: "failed", p.CANCELLED: "cancelled"}


@dataclass
class SideFeed:
    """One side's events as generated: its text, when each piece became complete, how it ended."""

    text: str = ""
    piece_ends: list[int] = field(default_factory=list)  # character offsets where complete pieces end
    complete_at: list[float] = field(default_factory=list)
    place: tuple[int, int] | None = None  # (position, waiting) in the fair line, as last said
    loading_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    end_event: dict | None = None
    # Set by the first event: a token first means the stream lost its beginning (Redis restarted
    # empty mid-answer and the worker wrote on into a fresh stream), so only the end's text is whole.
    headless: bool | None = None

    @property
    def ended(self) -> bool:
        return self.ended_at is not None

    @property
    def cancelled(self) -> bool:
        return self.end_event is not None and self.end_event["type"] == p.CANCELLED

    def add(self, t: float, ev: dict) -> None:
        kind = ev["type"]
        if self.ended:
            return
        if self.headless is None:
            self.headless = kind == p.TOKEN
        if kind == p.QUEUED:
            self.place = (int(ev.get("position") or 1), int(ev.get("waiting") or 1))
        elif kind == p.LOADING and self.loading_at is None:
            self.loading_at = t
        elif kind == p.STARTED and self.started_at is None:
            self.started_at = t
        elif kind == p.TOKEN:
            self.text += ev.get("text", "")
            self._complete_pieces(t, final=False)
        elif kind in p.TERMINAL_EVENTS:
            final_text = ev.get("text")
            if isinstance(final_text, str) and final_text.startswith(self.text[:self._complete_chars()]):
                self.text = final_text  # the worker's own final text (a stop sequence trimmed)
            elif isinstance(final_text, str) and self.headless:  # the whole answer, not the tail we saw
                self.text, self.piece_ends, self.complete_at = final_text, [], []
            self.ended_at, self.end_event = t, ev
            self._complete_pieces(t, final=True)

    def _complete_chars(self) -> int:
        return self.piece_ends[-1] if self.piece_ends else 0

    def _complete_pieces(self, t: float, final: bool) -> None:
        pos = self._complete_chars()
        while (match := PIECE.match(self.text, pos)) and (match.end() < len(self.text) or final):
            pos = match.end()
            self.piece_ends.append(pos)
            self.complete_at.append(t)
        if final and pos < len(self.text):  # trailing whitespace rides with the last piece
            if self.piece_ends:
                self.piece_ends[-1] = len(self.text)
            else:
                self.piece_ends.append(len(self.text))
                self.complete_at.append(t)


@dataclass(frozen=True)
class SideView:
    """What one side shows at a moment: its text so far and its state."""

    text: str
    state: str  # queued, loading, running, done, failed, cancelled
    end_event: dict | None = None  # the terminal event, once the side shows as ended
    place: tuple[int, int] | None = None  # while queued: (position, waiting) in the fair line, both sides' alike

    @property
    def ended(self) -> bool:
        return self.state in ENDED_STATE.values()


class Pacer:
    """Feed it the sides' events with their server times (`add`); ask what shows at `now` (`view`)."""

    def __init__(self, sides: int = 2, words_per_s: float = 20.0):
        self.sides = [SideFeed() for _ in range(sides)]
        self.gap = 1.0 / words_per_s  # the fastest pace allowed
        self.pace: float | None = None  # the gap between releases, chosen once before the first one
        self.began_at: float | None = None  # release[0]
        self.release: list[float] = []  # release[k]: when piece k of every side is shown

    def add(self, side: int, t: float, ev: dict) -> None:
        self.sides[side].add(t, ev)

    # --- the schedule -------------------------------------------------------------------
    def start(self) -> float | None:
        """When both sides show as running: the later start (or end, for a side that never started)."""
        times = [t for s in self.sides if (t := s.started_at if s.started_at is not None else s.ended_at) is not None]
        return max(times) if len(times) == len(self.sides) else None

    def _begin(self) -> bool:
        """Choose when the release begins and its pace, once every side is measured."""
        if self.pace is not None:
            return True
        start = self.start()
        if start is None:
            return False
        measured_at, slowest = [start], 0.0  # slowest: the largest seconds per piece among the sides still writing
        for side in self.sides:
            if len(side.complete_at) >= PROBE:
                first, probed = side.complete_at[0], side.complete_at[PROBE - 1]
                if side.ended_at is None or side.ended_at > probed:  # still writing when measured
                    slowest = max(slowest, (probed - first) / (PROBE - 1))
                measured_at.append(probed)
            elif side.ended_at is not None:
                measured_at.append(side.ended_at)
            else:
                return False  # this side has not written enough to be measured yet
        self.began_at = max(measured_at)
        self.pace = max(self.gap, slowest / MARGIN)
        return True

    def _extend(self) -> None:
        """Fix every release time that the events so far determine."""
        if not self._begin():
            return
        assert self.pace is not None and self.began_at is not None
        while True:
            k = len(self.release)
            due = self.began_at if k == 0 else self.release[-1] + self.pace
            writing = []  # the sides that have piece k (or may still write it)
            for side in self.sides:
                if k < len(side.complete_at):
                    writing.append(side)
                elif side.ended_at is None:
                    return  # this side's piece k is still being written
            if not writing:
                return  # every piece of every side is scheduled
            if all(side.complete_at[k] <= due for side in writing):
                # A side whose pieces are all out but whose end came later (after trailing
                # whitespace) was still writing, as far as anyone knew, until it ended.
                late_ends = [s.ended_at for s in self.sides if k >= len(s.complete_at) and s.ended_at is not None]
                self.release.append(max([due, *late_ends]))
                continue
            # A side fell behind the pace: hold until every side has a second of the pace in hand
            # (or has ended), then go on at the same pace.
            ahead = k + max(PROBE, math.ceil(RESUME_S / self.pace)) - 1
            ready = []
            for side in writing:
                if ahead < len(side.complete_at):
                    ready.append(side.complete_at[ahead])
                elif side.ended_at is not None:
                    ready.append(side.ended_at)
                else:
                    return  # not yet known
            self.release.append(max(due, *ready))

    # --- what shows -------------------------------------------------------------------
    def view(self, now: float) -> list[SideView]:
        self._extend()
        released = sum(1 for t in self.release if t <= now)
        start = self.start()
        return [self._side_view(side, released, start, now) for side in self.sides]

    def _side_view(self, side: SideFeed, released: int, start: float | None, now: float) -> SideView:
        shown = min(released, len(side.piece_ends))
        if side.cancelled and (ended_at := side.ended_at) is not None:  # only what was out when it was cancelled
            shown = min(shown, sum(1 for t in self.release[:len(side.piece_ends)] if t <= ended_at))
        text = side.text[:side.piece_ends[shown - 1]] if shown else ""
        end_event = side.end_event  # set with ended_at: there once the side has ended
        if end_event is not None and now >= self._shown_ended_at(side, start) and (
                side.cancelled or shown == len(side.piece_ends)):
            return SideView(text, ENDED_STATE[end_event["type"]], end_event)
        if start is not None and now >= start:
            return SideView(text, "running")
        if any(s.loading_at is not None for s in self.sides):
            return SideView(text, "loading")
        return SideView(text, "queued", place=side.place)

    def _shown_ended_at(self, side: SideFeed, start: float | None) -> float:
        assert side.ended_at is not None
        if start is None:  # the other side is not running yet: this one shows as ended when it is
            return float("inf")
        if side.cancelled or not side.piece_ends:
            return max(side.ended_at, start)
        last = len(side.piece_ends) - 1
        return max(side.ended_at, self.release[last]) if last < len(self.release) else float("inf")

    def next_change(self, now: float) -> float | None:
        """The next moment after `now` at which a view changes with what is known, or None
        (it will change only when more events come)."""
        self._extend()
        start = self.start()
        times = [t for t in self.release if t > now]
        if start is not None and start > now:
            times.append(start)
        times += [t for s in self.sides if s.ended for t in [self._shown_ended_at(s, start)] if now < t < float("inf")]
        return min(times) if times else None

    def finished(self, now: float) -> bool:
        """Whether every side shows as ended."""
        return all(v.ended for v in self.view(now))
