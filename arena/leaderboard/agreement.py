"""How often a model judge agrees with people, on the pairs both judged. Pure.

A pair is two stored answers (generations), whichever side each was shown on. A pair counts
when it has at least one person's verdict and one judge's; the latest of each is compared.
They agree when they name the same winning answer, or when neither names one (a tie and
"both bad" both mean "no winner": a judge's order-swap rule turns a disagreement into a tie,
so telling the two apart would ask of it what it cannot say).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Agreement:
    rate: float | None  # None: no pair was judged by both
    pairs: int


def winner(left: Hashable, right: Hashable, outcome: str) -> Hashable | None:
    """The answer a verdict prefers, or None when it prefers neither."""
    return left if outcome == "left" else right if outcome == "right" else None


def agreement(verdicts: Iterable[tuple[Hashable, Hashable, str, bool]]) -> Agreement:
    """Over (left answer, right answer, outcome, judged) verdicts, oldest first: the share of
    pairs with both a person's and a judge's verdict where the latest of each agree."""
    latest: dict[tuple[frozenset, bool], Hashable | None] = {}
    for left, right, outcome, judged in verdicts:
        latest[(frozenset((left, right)), judged)] = winner(left, right, outcome)
    both = [pair for pair, judged in latest if not judged and (pair, True) in latest]
    if not both:
        return Agreement(None, 0)
    agreed = sum(1 for pair in both if latest[(pair, False)] == latest[(pair, True)])
    return Agreement(agreed / len(both), len(both))
