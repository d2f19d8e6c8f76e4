"""Agreement between raters on the pairs they judged in common. Pure: no Django.

Two raters: Cohen's kappa on the pairs both judged. Three or more: Fleiss' kappa over the pairs
at least two of them judged, in its form for a varying number of raters per item (each pair's
agreement among the raters who judged it; the category shares pooled over every verdict), which
is Fleiss' own when every rater judged every pair. The 95% interval is a percentile bootstrap
over pairs (resampled with replacement, seeded, so the page shows the same numbers each time);
resamples in which kappa is undefined (every verdict in one category) are left out. Below
`FLOOR` shared pairs there is no figure: "too few shared pairs"."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FLOOR = 5  # shared pairs below which no agreement is given
RESAMPLES = 1000


@dataclass(frozen=True)
class Agreement:
    method: str  # "cohen" or "fleiss"
    raters: int
    shared: int  # pairs judged by two raters or more (Cohen: by both)
    kappa: float | None  # None: too few shared pairs, or undefined (one category only)
    low: float | None = None
    high: float | None = None

    @property
    def too_few(self) -> bool:
        return self.shared < FLOOR


Ratings = Mapping[Any, Mapping[Any, str]]  # rater -> pair -> verdict


def _kappa(items: list[list[str]]) -> float | None:
    """Fleiss' kappa (its form for a varying number of raters per item) of items each holding
    two verdicts or more. (Two raters get Cohen's, `_cohen`: Fleiss' pools their marginals.)"""
    p_items: list[float] = []
    totals: Counter[str] = Counter()
    n_all = 0
    for verdicts in items:
        n = len(verdicts)
        counts = Counter(verdicts)
        totals.update(counts)
        n_all += n
        p_items.append((sum(c * c for c in counts.values()) - n) / (n * (n - 1)))
    p_bar = sum(p_items) / len(p_items)
    p_e = sum((c / n_all) ** 2 for c in totals.values())
    return None if p_e >= 1 else (p_bar - p_e) / (1 - p_e)


def _cohen(items: list[list[str]]) -> float | None:
    """Cohen's kappa of items each holding [rater one's verdict, rater two's]."""
    n = len(items)
    first, second = Counter(a for a, _ in items), Counter(b for _, b in items)
    observed = sum(a == b for a, b in items) / n
    expected = sum(first[c] * second[c] for c in first) / (n * n)
    return None if expected >= 1 else (observed - expected) / (1 - expected)


def agreement(ratings: Ratings, resamples: int = RESAMPLES, seed: int = 0, floor: int = FLOOR) -> Agreement | None:
    """The agreement of the raters with any verdict (None with fewer than two)."""
    raters = [r for r in ratings if ratings[r]]
    if len(raters) < 2:
        return None
    if len(raters) == 2:
        one, two = ratings[raters[0]], ratings[raters[1]]
        keys = sorted((k for k in one if k in two), key=repr)
        items = [[one[k], two[k]] for k in keys]
        method, fn = "cohen", _cohen
    else:
        everyone = {k for r in raters for k in ratings[r]}
        keys = sorted(everyone, key=repr)
        items = [[ratings[r][k] for r in raters if k in ratings[r]] for k in keys]
        items = [v for v in items if len(v) >= 2]
        method, fn = "fleiss", _kappa
    if len(items) < floor:
        return Agreement(method, len(raters), len(items), None)
    kappa = fn(items)
    if kappa is None:
        return Agreement(method, len(raters), len(items), None)
    rng = random.Random(seed)
    drawn = sorted(k for k in (fn([rng.choice(items) for _ in items]) for _ in range(resamples)) if k is not None)
    if not drawn:
        return Agreement(method, len(raters), len(items), kappa)
    low = drawn[int(0.025 * (len(drawn) - 1))]
    high = drawn[round(0.975 * (len(drawn) - 1))]
    return Agreement(method, len(raters), len(items), kappa, low, high)
