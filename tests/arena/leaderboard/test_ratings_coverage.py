"""Do the leaderboard's "95%" intervals hold the truth 95% of the time? Simulated verdicts between
models of known strength (Bradley–Terry, on the Elo scale), fitted by arena.leaderboard.ratings,
and the share of true ratings inside their intervals counted, at 5, 20 and 200 verdicts.

The truth is centred the way the fit anchors its scale: the models that fought average 1000.
With ties, a tie is drawn so that the expected score (ties half) is still the true Bradley–Terry
probability: ties are likelier between close models, and they move nothing on average.

Also: no interval of zero width, and no single rank, from one verdict or from nine ties."""

from __future__ import annotations

import numpy as np
import pytest

from arena.leaderboard.ratings import leaderboard

# The four models (400 points from first to last), and a wider field (600 points).
CLOSE = {"alpha": 1200.0, "bravo": 1070.0, "charlie": 930.0, "delta": 800.0}
WIDE = {"alpha": 1300.0, "bravo": 1100.0, "charlie": 900.0, "delta": 700.0}
SIZES = (5, 20, 200)
REPLICATES = 200
LOW, HIGH = 0.93, 0.99  # the coverage a 95% interval must show, with room for the simulation's noise


def simulate(truth: dict[str, float], n: int, rng: np.random.Generator, ties: float = 0.0):
    """`n` verdicts between random pairs; P(tie) = ties · 2·min(p, 1 − p), where p is the true
    chance that the first wins, and P(first wins) = p − P(tie)/2: the expected score stays p."""
    models = list(truth)
    first = rng.integers(0, len(models), n)
    second = (first + rng.integers(1, len(models), n)) % len(models)  # any other model, evenly
    strength = np.array([truth[m] for m in models])
    p = 1 / (1 + 10 ** ((strength[second] - strength[first]) / 400))
    tie = ties * 2 * np.minimum(p, 1 - p)
    u = rng.random(n)
    score = np.where(u < p - tie / 2, 1.0, np.where(u < p + tie / 2, 0.5, 0.0))
    return [(models[i], models[j], float(x)) for i, j, x in zip(first, second, score, strict=True)]


def coverage(truth: dict[str, float], n: int, seed: int, ties: float = 0.0) -> float:
    rng = np.random.default_rng(seed)
    inside = total = 0
    for _ in range(REPLICATES):
        rows = leaderboard(simulate(truth, n, rng, ties), rounds=20, seed=0)
        centre = np.mean([truth[r.model] for r in rows]) - 1000  # the models that fought average 1000
        inside += sum(r.lower <= truth[r.model] - centre <= r.upper for r in rows)
        total += len(rows)
    return inside / total


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize(("truth", "ties"), [(CLOSE, 0.0), (WIDE, 0.0), (CLOSE, 0.3)], ids=["close", "wide", "ties"])
def test_95_percent_intervals_hold_the_true_rating_about_95_percent_of_the_time(truth, ties, n):
    assert LOW <= coverage(truth, n, seed=n, ties=ties) <= HIGH


def test_one_verdict_gives_intervals_of_positive_width_and_two_places_each():
    rows = leaderboard([("winner", "loser", 1.0)])
    for row in rows:
        assert row.upper - row.lower > 100 and row.sd > 0  # one verdict says little: wide, never zero
        assert (row.rank_best, row.rank_worst) == (1, 2) and row.rank_range == "1st–2nd"
    winner, loser = rows
    assert winner.model == "winner" and winner.rating > 1000 > loser.rating  # it still leans the right way


def test_nine_ties_among_three_models_leave_every_place_open():
    rows = leaderboard([("a", "b", 0.5), ("b", "c", 0.5), ("a", "c", 0.5)] * 3)
    for row in rows:
        assert row.rating == pytest.approx(1000) and row.upper - row.lower > 100
        assert row.rank_range == "1st–3rd"
    # Ties are evidence the three are close: narrower than on one verdict, yet far from zero width.
    one = leaderboard([("a", "b", 1.0)])[0]
    assert rows[0].upper - rows[0].lower < one.upper - one.lower
