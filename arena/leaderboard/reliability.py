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
pairs a kappa is not given (None: "too few pairs"): on a handful of pairs it would say more
about chance than about the judge.

The three shares are always given as counts (`Share`: k of n) with a 95% Wilson score interval,
however few the readings: the interval says how little a few readings show, and a page's
headline and its table both read these same counts. From them, a verdict on the judge
(`judge_verdict`), the rule being:

- unreliable when its readings show it reads positions or says nothing: the interval of its
  share of decisive readings naming the answer shown first lies wholly above `POSITION_LIMIT`
  (0.8), or wholly below 1 − `POSITION_LIMIT` (it names the one shown second); or the interval
  of its self-consistency lies wholly below `CONSISTENCY_LIMIT` (0.5: its two readings of a pair
  disagree more often than not); or the interval of its tie rate lies wholly above `TIE_LIMIT`
  (0.8: its verdicts tell almost no answer from another). With intervals, a judge is called
  unreliable only when its readings show it (18 of 18 readings naming the first answer do:
  the interval is 82% to 100%; 6 of 6 do not yet: 61% to 100%);
- else not enough readings, below `MIN_PAIRS` pairs read in both orders;
- else reliable (no test above fired on `MIN_PAIRS` pairs or more).

Each verdict comes with a sentence in words saying which figures gave it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

LEFT, RIGHT = "left", "right"
DECISIVE = (LEFT, RIGHT)
MIN_PAIRS = 10
RESAMPLES = 2000
LEVEL = 0.95
FIRST, SECOND, NEITHER = 0, 1, 2  # the answers a verdict can give, in a pair's canonical order
CATEGORIES = 3
Z = NormalDist().inv_cdf(1 - (1 - LEVEL) / 2)  # 1.96: the two-sided 95% normal quantile
POSITION_LIMIT = 0.8  # a judge naming the answer shown first (or second) more often than this reads positions
CONSISTENCY_LIMIT = 0.5  # a judge whose two readings agree less often than this mostly makes ties
TIE_LIMIT = 0.8  # a judge saying a tie more often than this tells almost no answer from another
RELIABLE, UNRELIABLE, NOT_ENOUGH = "reliable", "unreliable", "not enough readings"


def wilson(count: int, total: int, z: float = Z) -> tuple[float, float] | None:
    """The Wilson score interval of `count` successes in `total` trials (None when there is no
    trial). Unlike the plain normal interval it stays within [0, 1] and is not zero-width at
    0 of n or n of n, which is where a position-reading judge's figures sit."""
    if total <= 0:
        return None
    p, n = count / total, total
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # At 0 of n (n of n) the bound is 0 (1) exactly; the arithmetic leaves a rounding error there.
    low = 0.0 if count == 0 else max(0.0, centre - half)
    high = 1.0 if count == total else min(1.0, centre + half)
    return min(low, p), max(high, p)


@dataclass(frozen=True)
class Share:
    """`count` of `total`, with its 95% Wilson interval (value, low, high None when total is 0)."""

    count: int
    total: int

    @property
    def value(self) -> float | None:
        return self.count / self.total if self.total else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.count, self.total)

    @property
    def low(self) -> float | None:
        bounds = self.interval
        return bounds[0] if bounds else None

    @property
    def high(self) -> float | None:
        bounds = self.interval
        return bounds[1] if bounds else None

    def above(self, limit: float) -> bool:
        """Its whole interval lies above `limit` (False with no trial)."""
        return self.total > 0 and self.low is not None and self.low > limit

    def below(self, limit: float) -> bool:
        return self.total > 0 and self.high is not None and self.high < limit


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
    consistent: Share  # pairs whose two readings agree, of the pairs read in both orders
    first: Share  # decisive readings naming the answer shown first, of the decisive readings
    ties: Share  # readings saying a tie (or both bad), of the readings
    people: Kappa
    verdict: str  # RELIABLE, UNRELIABLE or NOT_ENOUGH (`judge_verdict`)
    sentence: str  # the verdict in words, with the figures that gave it

    @property
    def self_consistency(self) -> float | None:
        return self.consistent.value

    @property
    def position_bias(self) -> float | None:
        return self.first.value

    @property
    def tie_rate(self) -> float | None:
        return self.ties.value

    @property
    def unreliable(self) -> bool:
        return self.verdict == UNRELIABLE


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
                min_pairs: int = MIN_PAIRS, seed: int = 0, between: bool = True) -> Report:
    """Every judge's figures over its `readings` (oldest first), with people's verdicts
    ((left, right, outcome), oldest first) to agree with, and every two judges' agreement
    (`between`: False leaves it out, for a caller that wants the verdicts alone)."""
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
    agreements = []
    for a, b in itertools.combinations(latest if between else (), 2):
        common = [(verdicts[a][pair], verdicts[b][pair]) for pair in verdicts[a] if pair in verdicts[b]]
        if common:
            agreements.append((a, b, _kappa_of(common, min_pairs, seed)))
    return Report(figures, agreements, min_pairs)


def unreliable(readings: Iterable[Reading], min_pairs: int = MIN_PAIRS) -> set[str]:
    """The judges whose `readings` mark them unreliable (the rule of `judge_verdict`)."""
    return {f.judge for f in reliability(readings, min_pairs=min_pairs, between=False).judges if f.unreliable}


def _judge(judge: str, readings: list[Reading], verdicts: dict[frozenset, int], person: dict[frozenset, int],
           min_pairs: int, seed: int) -> JudgeReliability:
    both = [r for r in readings if r.both]
    shown = [(order, verdict) for r in readings
             for order, verdict in (("left_first", r.left_first), ("right_first", r.right_first)) if verdict]
    decisive = [(order, verdict) for order, verdict in shown if verdict in DECISIVE]
    first_won = sum((order == "left_first") == (verdict == LEFT) for order, verdict in decisive)
    rated = [(verdicts[pair], person[pair]) for pair in verdicts if pair in person]
    consistent = Share(sum(r.left_first == r.right_first for r in both), len(both))
    first = Share(first_won, len(decisive))
    ties = Share(sum(v not in DECISIVE for _o, v in shown), len(shown))
    verdict, sentence = judge_verdict(consistent, first, ties, min_pairs)
    return JudgeReliability(
        judge=judge, pairs=len(both), readings=len(shown), decisive=len(decisive),
        consistent=consistent, first=first, ties=ties, people=_kappa_of(rated, min_pairs, seed),
        verdict=verdict, sentence=sentence)


def _of(share: Share, noun: str) -> str:
    """"3 of 18 readings" ("reading naming a winner" -> "readings naming a winner")."""
    head, _, tail = noun.partition(" ")
    plural = head if share.total == 1 else head + "s"
    return f"{share.count} of {share.total} {plural}" + (f" {tail}" if tail else "")


def judge_verdict(consistent: Share, first: Share, ties: Share, min_pairs: int = MIN_PAIRS) -> tuple[str, str]:
    """(RELIABLE, UNRELIABLE or NOT_ENOUGH, the reason in words) by the rule in the module's
    docstring; the first test that fires gives the sentence."""
    # "readings" when every reading named a winner, as on the always-"A" judge.
    readings = "reading" if first.total == ties.total else "reading naming a winner"
    if first.above(POSITION_LIMIT):
        return UNRELIABLE, (f"This judge picked the answer shown first in {_of(first, readings)}: "
                            "its verdicts say nothing about the answers.")
    if first.below(1 - POSITION_LIMIT):
        second = Share(first.total - first.count, first.total)
        return UNRELIABLE, (f"This judge picked the answer shown second in {_of(second, readings)}: "
                            "its verdicts say nothing about the answers.")
    if consistent.below(CONSISTENCY_LIMIT):
        return UNRELIABLE, (f"This judge agreed with itself on only {_of(consistent, 'pair')} read both ways: "
                            "its verdicts are mostly ties made by its own disagreement.")
    if ties.above(TIE_LIMIT):
        return UNRELIABLE, (f"This judge said a tie in {_of(ties, 'reading')}: "
                            "its verdicts tell almost no answer from another.")
    if consistent.total < min_pairs:
        read = f"{consistent.total} pair{'' if consistent.total == 1 else 's'}"
        return NOT_ENOUGH, f"Only {read} read both ways, of the {min_pairs} needed to call it reliable."
    return RELIABLE, (f"No sign of reading positions: it agreed with itself on {_of(consistent, 'pair')} "
                      f"and picked the answer shown first in {_of(first, readings)}.")


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
