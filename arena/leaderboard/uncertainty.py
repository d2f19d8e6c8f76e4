"""Uncertainty in words: rank ranges ("2nd–4th"), provisional entries, and how many more
verdicts would separate two entries at their current win rate.

Pure: numbers in, numbers and words out; nothing of Django (the view reads the setting and the
cached results and passes them here).

Rank ranges come from draws of the leaderboard's own posterior (ratings.Posterior.draws: the
Laplace approximation of the Bayesian Bradley–Terry fit): in each draw every entry takes the rank
1 + the number of entries rated strictly above it there; its range is the 2.5th to the 97.5th
percentile of those ranks (rounded outwards), widened to hold its place in the table when the
draws rarely put it there. The prior keeps the draws apart on few verdicts, so one verdict or a
handful of ties never yields a single place.

Below the provisional floor (ARENA_LEADERBOARD_PROVISIONAL_VERDICTS, read by the view) an entry
shows NOT_ENOUGH_VERDICTS in place of a single rank (`rank_shown`); its rank range still shows.

The separation estimate is the Wilson (score) interval's: at an observed rate p of A beating B,
a two-sided interval at level z excludes 0.5 exactly when n > z² / (4·(p − 0.5)²), because the
interval's lower bound above 0.5 reduces to (p − 0.5)² > z²·(p(1 − p)/n + z²/(4n²)), whose
positive root is that threshold (p(1 − p) = 1/4 − d² and (1/4 − d²)² + d² = (1/4 + d²)²). Ties
count half a win each way, as in the ratings; a tie's half score varies less than a win's, so
treating the verdicts as wins and losses only overstates the count (errs on the safe side).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054  # two-sided 95%: the normal distribution's 97.5th percentile


# --- Rank ranges -------------------------------------------------------------------------------

def sample_ranks(samples: np.ndarray) -> np.ndarray:
    """Each draw's ranks (rows: draws, columns: entries): 1 + the entries rated above."""
    return 1 + (samples[:, None, :] > samples[:, :, None]).sum(axis=2)


def rank_ranges(samples: np.ndarray, point: np.ndarray) -> list[tuple[int, int]]:
    """(best, worst) rank of each entry (a column of `samples`, the posterior's draws): the 2.5th
    and 97.5th percentiles of its ranks there, rounded outwards and widened to hold its rank by the `point` ratings."""
    n = len(point)
    if n == 0:
        return []
    point_ranks = 1 + (point[None, :] > point[:, None]).sum(axis=1)
    if len(samples) == 0:
        return [(int(r), int(r)) for r in point_ranks]
    ranks = sample_ranks(samples)
    low = np.floor(np.percentile(ranks, 2.5, axis=0) + 1e-9)
    high = np.ceil(np.percentile(ranks, 97.5, axis=0) - 1e-9)
    return [(int(min(low[i], point_ranks[i])), int(max(high[i], point_ranks[i]))) for i in range(n)]


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, …, 11th, 12th, 13th, …, 21st, 22nd, 101st, 111th."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def rank_words(best: int, worst: int) -> str:
    """"1st" when the range is one place, "2nd–4th" otherwise."""
    return ordinal(best) if best == worst else f"{ordinal(best)}–{ordinal(worst)}"


# --- Provisional entries ------------------------------------------------------------------------

NOT_ENOUGH_VERDICTS = "not enough verdicts"  # in place of a provisional entry's single rank


def provisional(verdicts: int, threshold: int) -> bool:
    """An entry rated on fewer verdicts than the threshold (in the view shown) is provisional."""
    return verdicts < threshold


def rank_shown(rank: int, verdicts: int, threshold: int) -> str:
    """The rank a table shows: the number, or NOT_ENOUGH_VERDICTS below the provisional floor (a
    single place from a handful of verdicts says more than they do)."""
    return NOT_ENOUGH_VERDICTS if provisional(verdicts, threshold) else str(rank)


# --- How many more verdicts would separate two entries -------------------------------------------

@dataclass(frozen=True)
class Separation:
    rate: float  # how often the first entry beat the second (ties half), observed or predicted
    given: int  # verdicts between them so far
    needed: int | None  # verdicts in all at this rate for the interval to exclude 0.5; None: never
    lower: float | None  # the Wilson interval of the rate on the verdicts given; None when none
    upper: float | None

    @property
    def separated(self) -> bool:
        return self.needed is not None and self.given >= self.needed

    @property
    def more(self) -> int | None:
        """Verdicts still to give (0 once separated); None: no number of them would do."""
        return None if self.needed is None else max(0, self.needed - self.given)


def verdicts_to_separate(rate: float, z: float = Z95) -> int | None:
    """The fewest verdicts at win rate `rate` whose two-sided Wilson interval (at `z`) excludes
    0.5: the smallest n > z² / (4·(rate − 0.5)²); None at exactly 0.5 (no number would do)."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"a win rate is between 0 and 1, not {rate}")
    distance = abs(rate - 0.5)
    if distance == 0:
        return None
    return math.floor(z * z / (4 * distance * distance)) + 1


def wilson(rate: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion `rate` observed on `n` trials (n > 0)."""
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def separation(rate: float, given: int, z: float = Z95) -> Separation:
    """How far two entries are from being told apart at `rate` (A's share of wins over B, ties
    half) after `given` verdicts between them."""
    if given < 0:
        raise ValueError(f"a count of verdicts is not negative: {given}")
    interval = wilson(rate, given, z) if given else (None, None)
    return Separation(rate, given, verdicts_to_separate(rate, z), *interval)


def expected_rate(rating_a: float, rating_b: float) -> float:
    """The share of verdicts A wins over B (ties half) that two Elo-scale ratings predict."""
    return 1 / (1 + 10 ** ((rating_b - rating_a) / 400))


@dataclass(frozen=True)
class PairEstimate:
    first: str  # the two entries' slugs, as chosen
    second: str
    separation: Separation
    met: bool  # False: no verdict between them yet, the rate is the one their ratings predict


def pair_estimate(first: str, second: str, ratings: dict[str, float],
                  cells: dict[tuple[str, str], tuple[float, int]], z: float = Z95) -> PairEstimate | None:
    """The estimate for two rated entries: at their head-to-head rate (ratings.win_matrix's cell)
    when they have met, else at the rate their ratings predict. None when either is not rated
    here or both are the same entry."""
    if first == second or first not in ratings or second not in ratings:
        return None
    rate, given = cells.get((first, second), (0.0, 0))
    if given:
        return PairEstimate(first, second, separation(rate, given, z), met=True)
    return PairEstimate(first, second, separation(expected_rate(ratings[first], ratings[second]), 0, z), met=False)


def default_pair(order: Sequence[str]) -> tuple[str, str]:
    """The pair the page shows before one is chosen: the top two (empty when fewer are rated)."""
    return (order[0], order[1]) if len(order) >= 2 else ("", "")
