"""Why each contestant won and lost: the reason tags people gave with their verdicts
(arena.battles.models.ReasonTag), counted per contestant. Pure: no Django.

A reason is given with a verdict, not with one answer: a verdict "left is better, too long"
counts "too long" among the reasons the left contestant won by and the right one lost by (it
most likely describes the loser). A tie or "both are bad" counts its reasons for both, apart."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

WON, LOST, EVEN = "won", "lost", "even"


@dataclass(frozen=True)
class Why:
    """One contestant's reasons: for each of won, lost and even (tie or both bad), how many of
    those verdicts carried a reason, and each reason's count, most frequent first."""

    model: str
    verdicts: dict[str, int]
    reasons: dict[str, list[tuple[str, int]]]

    @property
    def total(self) -> int:
        return sum(self.verdicts.values())


def count(rows: Iterable[tuple[str, str, str, Sequence[str]]], order: Sequence[str] = ()) -> list[Why]:
    """`rows`: (left slug, right slug, outcome, reason slugs) of the verdicts counted; a verdict
    without reasons adds nothing. One Why per contestant with at least one reason, in `order`
    (the leaderboard's) and then by slug."""
    reasons: dict[str, dict[str, Counter]] = {}
    verdicts: dict[str, Counter] = {}
    for left, right, outcome, given in rows:
        if not given:
            continue
        if outcome == "left":
            shares = ((left, WON), (right, LOST))
        elif outcome == "right":
            shares = ((right, WON), (left, LOST))
        else:  # a tie or both bad
            shares = ((left, EVEN), (right, EVEN))
        for model, how in shares:
            reasons.setdefault(model, {WON: Counter(), LOST: Counter(), EVEN: Counter()})[how].update(set(given))
            verdicts.setdefault(model, Counter())[how] += 1
    rank = {slug: i for i, slug in enumerate(order)}
    return [Why(model, {how: verdicts[model][how] for how in (WON, LOST, EVEN)},
                {how: sorted(c.items(), key=lambda kv: (-kv[1], kv[0])) for how, c in reasons[model].items()})
            for model in sorted(reasons, key=lambda m: (rank.get(m, len(rank)), m))]
