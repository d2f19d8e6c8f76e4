"""How far a model judge can be trusted, from its stored readings. Pure: no Django, no clock.

A judge reads each pair of answers twice, each answer shown first once (arena.battles.judging);
a `Reading` is one judge's two readings of one pair, in the pair's left/right terms ("" for a
reading that failed). Per judge:

- self-consistency: the share of its pairs (read in both orders) whose two readings agree;
- position bias: the share of its decisive readings (left or right, not a tie) that prefer the
  answer shown first: 0.5 is no bias, 1 always the first, 0 always the second;
- tie rate: the share of its readings that say a tie (or both bad);
- agreement with people: Cohen's kappa between the judge's verdict (its order-consistent one,
  a tie when its orders disagree) and people's (the latest person's verdict on that pair), on
  the pairs both judged, over three answers: one answer of the pair wins, the other does,
  neither does (a tie and "both bad" both say no winner, as arena.leaderboard.agreement reads
  them). Which answer of a pair is "one" is arbitrary, and kappa's chance agreement would
  depend on it, so each pair is counted once each way round (the table is made symmetric):
  the figure is the same whichever way the pairs are written. Its 95% interval is a seeded
  bootstrap over those pairs (`bootstrap_kappa`);
- agreement between judges: Cohen's kappa between two judges' verdicts on the pairs both read.

A pair is its two answers, whichever side each was shown on; read more than once by a judge
(or judged more than once by people), its latest reading (verdict) counts. Below `MIN_PAIRS`
pairs a figure is not given (None: "too few pairs"): on a handful of pairs it would say more
about chance than about the judge.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

import numpy as np

LEFT, RIGHT = "left", "right"
DECISIVE = (LEFT, RIGHT)
MIN_PAIRS = 10
RESAMPLES = 2000
LEVEL = 0.95
FIRST, SECOND, NEITHER = 0, 1, 2  # the answers a verdict can give, in a pair's canonical order
CATEGORIES = 3


@dataclass(frozen=True)
class Reading:
    """One judge's two readings of one pair: its verdict with the left answer shown first, and
    with the right one first, both in the pair's left/right terms ("": that reading failed)."""

    left: Hashable
    right: Hashable
    judge: str
    left_first: str
    right_first: str

    @property
    def both(self) -> bool:
        return bool(self.left_first and self.right_first)

    @property
    def verdict(self) -> str:
        """The judge's verdict on the pair: what both orders say, else a tie ("" if a reading failed)."""
        if not self.both:
            return ""
        return self.left_first if self.left_first == self.right_first else "tie"


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa on `pairs` pairs with its bootstrap interval; value None: too few pairs
    (below the threshold), or undefined (both raters gave one same answer every time)."""

    value: float | None
    low: float | None
    high: float | None
    pairs: int


@dataclass(frozen=True)
class JudgeReliability:
    judge: str
    pairs: int  # pairs it read in both orders
    readings: int  # readings that did not fail
    decisive: int  # readings naming a winner
    self_consistency: float | None  # None: too few pairs
    position_bias: float | None
    tie_rate: float | None
    people: Kappa


@dataclass(frozen=True)
class Report:
    judges: list[JudgeReliability]
    between: list[tuple[str, str, Kappa]]  # every two judges with a pair in common
    min_pairs: int


def cohen_kappa(rated: Iterable[tuple[int, int]], categories: int = CATEGORIES,
                symmetric: bool = False) -> float | None:
    """Cohen's kappa of two raters' answers (each an int below `categories`) on the same items:
    (observed agreement − chance agreement) / (1 − chance agreement); None when there is no
    item, or chance agreement is 1 (both always gave one same answer: kappa is undefined).
    `symmetric`: each item counted once more with FIRST and SECOND swapped (`_mirrored`)."""
    table = _table(rated, categories)
    return _kappa(_mirrored(table) if symmetric else table)


def _table(rated: Iterable[tuple[int, int]], categories: int) -> np.ndarray:
    table = np.zeros((categories, categories))
    for a, b in rated:
        table[a, b] += 1
    return table


def _mirrored(table: np.ndarray) -> np.ndarray:
    """The table plus itself with FIRST and SECOND swapped on both sides: a pair's verdicts
    counted both ways round (the table's last axes, so a stack of tables too)."""
    swap = [SECOND, FIRST, *range(2, table.shape[-1])]
    return table + table[..., swap, :][..., :, swap]


def _kappa(table: np.ndarray) -> float | None:
    n = table.sum()
    if n == 0:
        return None
    observed = np.trace(table) / n
    chance = float(table.sum(axis=1) @ table.sum(axis=0)) / n**2
    if chance >= 1 - 1e-12:
        return None
    return float((observed - chance) / (1 - chance))


def bootstrap_kappa(rated: list[tuple[int, int]], seed: int = 0, resamples: int = RESAMPLES,
                    level: float = LEVEL, categories: int = CATEGORIES,
                    symmetric: bool = False) -> tuple[float | None, float | None]:
    """The percentile interval of kappa over `resamples` resamples of the items with replacement
    (drawn as multinomial counts of the observed table's cells: the same distribution, at the
    cost of its cells rather than its items), seeded; resamples where kappa is undefined are
    left out. (None, None) when none is defined. `symmetric`: as cohen_kappa's, per resample."""
    table = _table(rated, categories)
    n = int(table.sum())
    if n == 0:
        return None, None
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, (table / n).ravel(), size=resamples).reshape(resamples, categories, categories)
    if symmetric:
        draws = _mirrored(draws)
    values = [k for k in (_kappa(t) for t in draws) if k is not None]
    if not values:
        return None, None
    tail = (1 - level) / 2
    low, high = np.quantile(values, [tail, 1 - tail])
    return float(low), float(high)


def answer_of(left: Hashable, right: Hashable, outcome: str) -> tuple[frozenset, int]:
    """A verdict as (its pair, the answer it gives in the pair's written order, its answers
    sorted by str: arbitrary, and kappa is computed so that it does not matter): the first
    answer wins, the second does, or neither (a tie, both bad)."""
    first, _second = sorted((left, right), key=str)
    if outcome in DECISIVE:
        winner = left if outcome == LEFT else right
        return frozenset((left, right)), FIRST if winner == first else SECOND
    return frozenset((left, right)), NEITHER


def _kappa_of(rated: list[tuple[int, int]], min_pairs: int, seed: int) -> Kappa:
    if len(rated) < min_pairs:
        return Kappa(None, None, None, len(rated))
    value = cohen_kappa(rated, symmetric=True)
    low, high = bootstrap_kappa(rated, seed, symmetric=True) if value is not None else (None, None)
    return Kappa(value, low, high, len(rated))


def reliability(readings: Iterable[Reading], people: Iterable[tuple[Hashable, Hashable, str]] = (),
                min_pairs: int = MIN_PAIRS, seed: int = 0) -> Report:
    """Every judge's figures over its `readings` (oldest first), with people's verdicts
    ((left, right, outcome), oldest first) to agree with, and every two judges' agreement."""
    latest: dict[str, dict[frozenset, Reading]] = {}
    for reading in readings:
        latest.setdefault(reading.judge, {})[frozenset((reading.left, reading.right))] = reading
    person: dict[frozenset, int] = {}
    for left, right, outcome in people:
        if outcome:
            pair, answer = answer_of(left, right, outcome)
            person[pair] = answer
    verdicts = {judge: {pair: answer_of(r.left, r.right, r.verdict)[1] for pair, r in pairs.items() if r.both}
                for judge, pairs in latest.items()}
    figures = [_judge(judge, list(pairs.values()), verdicts[judge], person, min_pairs, seed)
               for judge, pairs in latest.items()]
    between = []
    for a, b in itertools.combinations(latest, 2):
        common = [(verdicts[a][pair], verdicts[b][pair]) for pair in verdicts[a] if pair in verdicts[b]]
        if common:
            between.append((a, b, _kappa_of(common, min_pairs, seed)))
    return Report(figures, between, min_pairs)


def _judge(judge: str, readings: list[Reading], verdicts: dict[frozenset, int], person: dict[frozenset, int],
           min_pairs: int, seed: int) -> JudgeReliability:
    both = [r for r in readings if r.both]
    shown = [(order, verdict) for r in readings
             for order, verdict in (("left_first", r.left_first), ("right_first", r.right_first)) if verdict]
    decisive = [(order, verdict) for order, verdict in shown if verdict in DECISIVE]
    first_won = sum((order == "left_first") == (verdict == LEFT) for order, verdict in decisive)
    enough = len(both) >= min_pairs
    rated = [(verdicts[pair], person[pair]) for pair in verdicts if pair in person]
    return JudgeReliability(
        judge=judge, pairs=len(both), readings=len(shown), decisive=len(decisive),
        self_consistency=sum(r.left_first == r.right_first for r in both) / len(both) if enough else None,
        position_bias=first_won / len(decisive) if enough and decisive else None,
        tie_rate=sum(v not in DECISIVE for _o, v in shown) / len(shown) if enough else None,
        people=_kappa_of(rated, min_pairs, seed))


def readings_of(left: Hashable, right: Hashable, judgements: list[dict], default_judge: str) -> list[Reading]:
    """A judged battle's stored readings (Battle.judgements) as one Reading per judge; a reading
    that names no judge (stored before juries) is `default_judge`'s, and one with no reply (a
    generation that failed for good is stored as an empty text) counts as failed."""
    per_judge: dict[str, dict[str, str]] = {}
    for entry in judgements or ():
        verdict = entry.get("verdict", "") if entry.get("raw") else ""
        per_judge.setdefault(entry.get("judge") or default_judge, {})[entry.get("order", "")] = verdict
    return [Reading(left, right, judge, orders.get("left_first", ""), orders.get("right_first", ""))
            for judge, orders in per_judge.items()]
