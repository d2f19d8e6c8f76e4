"""What a battle shows now: its stored rows, and its streams where the page runs ahead of them.

The model holds what is stored; this is the one place that reads a battle's streams for a page,
an API answer or a vote check (models never read Redis). Two cases need the streams:
- a blind battle is paced (arena/battles/pacing.py): a side shows as ended only once all its
  text is out, on Redis's clock, whatever the row says;
- the battle task stores the rows a few milliseconds after the streams' terminal events, and a
  vote in between (the page's socket already showed both ends) must not be refused, so a side
  whose row is not yet final is read from its stream.

A view computes one `Shown` per battle (a page is one moment) and hands it to its template;
the template tags take it instead of the battle."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from arena.generations.models import Generation

from . import delivery
from .models import Battle
from .pacing import SideView
from .voting import vote_refusal_for


@dataclass(frozen=True)
class Shown:
    """A battle as a page, an API answer or a vote check sees it at one moment."""

    battle: Battle
    views: list[SideView] | None  # paced: what each side shows now; None: shown as stored

    def side(self, side: str) -> SideView | None:
        """What the "left" or "right" side shows now if paced, else None (show it as stored)."""
        return None if self.views is None else self.views[0 if side == "left" else 1]

    @property
    def finished(self) -> bool:
        """Both sides show as ended: stored, and (if paced) all their text is out."""
        return self.battle.finished and (self.views is None or all(v.ended for v in self.views))

    @cached_property
    def outcomes(self) -> list[str | None]:
        """Each side's "done", "cancelled", "failed", or None while still coming. A row stored as
        failed is final whatever the stream says; a paced side is ended once its text is out;
        otherwise the row if final, else the stream's terminal event (read only then)."""
        failed = Generation.Status.FAILED
        streamed: list[str | None] | None = None
        out: list[str | None] = []
        for i, (_side, gen) in enumerate(self.battle.sides):
            if gen.status == failed:
                out.append(failed)
            elif self.views is not None:
                out.append(self.views[i].state if self.views[i].ended else None)
            elif gen.finished:
                out.append(gen.status)
            else:
                if streamed is None:
                    streamed = delivery.stream_outcomes(self.battle)
                out.append(streamed[i])
        return out

    @property
    def refusal(self) -> str:
        """Why no verdict may be given now ("" when one may): see `vote_refusal_for`."""
        return vote_refusal_for(self.outcomes, self.battle.mode)

    @property
    def votable(self) -> bool:
        """Both answers are in and shown whole, none failed; a side the user stopped counts as in
        (a comparison or an anonymous battle is judged on what was written; a tournament match
        that was stopped is run again)."""
        return self.refusal == ""


def shown(battle: Battle) -> Shown:
    """What `battle` shows now. A blind battle's streams are read at once (its paced views: one
    moment for the whole page); another's only if a verdict check needs a side not yet stored."""
    return Shown(battle, delivery.paced_views(battle) if battle.paced else None)
