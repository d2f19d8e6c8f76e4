"""Bradley–Terry ratings against known strengths and against an independent fit.

The independent fit is plain gradient ascent on the same posterior (the battles'
logistic likelihood and the normal prior on each log-strength), written here from the formula,
sharing no code with arena.leaderboard.ratings (which solves it by Newton's method)."""

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.leaderboard.ratings import PRIOR_PRECISION, fit, leaderboard, shared_ranks, win_matrix

TRUE_ELO = {"alpha": 1250.0, "bravo": 1120.0, "charlie": 1000.0, "delta": 900.0, "echo": 760.0}


def synthetic_battles(n: int, seed: int, tie_rate: float = 0.15) -> list[tuple[str, str, float]]:
    """Random pairings; the winner drawn from the true Bradley–Terry probabilities; some ties."""
    rng = random.Random(seed)
    models = list(TRUE_ELO)
    battles = []
    for _ in range(n):
        a, b = rng.sample(models, 2)
        p_a = 1 / (1 + 10 ** ((TRUE_ELO[b] - TRUE_ELO[a]) / 400))
        score = 0.5 if rng.random() < tie_rate else float(rng.random() < p_a)
        battles.append((a, b, score))
    return battles


def gradient_ascent_fit(battles, steps=20000, lr=0.05) -> dict[str, float]:
    models = sorted({m for a, b, _s in battles for m in (a, b)})
    idx = {m: i for i, m in enumerate(models)}
    a = np.array([idx[x] for x, _y, _s in battles])
    b = np.array([idx[y] for _x, y, _s in battles])
    s = np.array([score for _x, _y, score in battles])
    theta = np.zeros(len(models))
    for _ in range(steps):
        grad = -PRIOR_PRECISION * theta  # the normal prior on each log-strength
        residual = s - 1 / (1 + np.exp(theta[b] - theta[a]))  # d log-likelihood / d(theta_a - theta_b)
        grad += np.bincount(a, weights=residual, minlength=len(models))
        grad -= np.bincount(b, weights=residual, minlength=len(models))
        theta += lr * grad / max(1, len(battles) / len(models))
        if np.max(np.abs(grad)) < 1e-7:
            break
    return {m: 1000 + 400 * theta[idx[m]] / math.log(10) for m in models}


def test_the_fit_recovers_the_true_order_and_agrees_with_an_independent_fit():
    battles = synthetic_battles(3000, seed=1)
    ours = fit(sorted(TRUE_ELO), battles)
    assert sorted(ours, key=ours.get, reverse=True) == list(TRUE_ELO)  # the true order
    independent = gradient_ascent_fit(battles[:600])
    small = fit(sorted(TRUE_ELO), battles[:600])  # few battles: the prior matters, and must agree too
    for model in TRUE_ELO:
        assert small[model] == pytest.approx(independent[model], abs=0.5)
    decisive = fit(sorted(TRUE_ELO), synthetic_battles(3000, seed=3, tie_rate=0.0))
    spread = {m: decisive[m] - decisive["charlie"] for m in TRUE_ELO}
    # Without ties (which pull ratings together) the differences are the truth's, within
    # sampling error of 3000 battles.
    for model, elo in TRUE_ELO.items():
        assert spread[model] == pytest.approx(elo - TRUE_ELO["charlie"], abs=45)


def test_intervals_cover_the_point_narrow_with_more_battles_and_ranks_share_on_overlap():
    few = {r.model: r for r in leaderboard(synthetic_battles(150, seed=2), rounds=100)}
    many = {r.model: r for r in leaderboard(synthetic_battles(3000, seed=2), rounds=100)}
    for model in TRUE_ELO:
        assert few[model].lower <= few[model].rating <= few[model].upper
        assert many[model].upper - many[model].lower < few[model].upper - few[model].lower
    assert many["alpha"].rank == 1 and many["echo"].rank == 5
    assert shared_ranks([10, 5, 0], [20, 15, 12]) == [1, 1, 1]  # all overlap: all first
    assert shared_ranks([10, 0], [20, 5]) == [1, 2]


def test_ties_count_half_each_way_and_a_model_that_never_won_stays_finite():
    rows = {r.model: r for r in leaderboard([("a", "b", 0.5)] * 4 + [("a", "c", 1.0)] * 5, rounds=20)}
    assert rows["a"].wins == 7.0 and rows["b"].wins == 2.0 and rows["c"].wins == 0.0
    assert rows["a"].win_rate == pytest.approx(7 / 9)
    assert math.isfinite(rows["c"].rating) and rows["c"].rating < rows["b"].rating < rows["a"].rating
    matrix = win_matrix([("a", "b", 1.0), ("b", "a", 0.5)])
    assert matrix[("a", "b")] == (0.75, 2) and matrix[("b", "a")] == (0.25, 2)


def test_no_battles_no_rows():
    assert leaderboard([]) == []


# A 20-verdict record on which the old bootstrap's warm-started Newton steps diverged in one
# resample (numpy.linalg.LinAlgError: Singular matrix): the page would have failed.
LOPSIDED = [("delta", "alpha", 0.0), ("alpha", "charlie", 1.0), ("delta", "charlie", 0.0), ("delta", "bravo", 0.0),
            ("bravo", "delta", 1.0), ("charlie", "bravo", 0.0), ("bravo", "alpha", 1.0), ("bravo", "delta", 1.0),
            ("alpha", "charlie", 1.0), ("alpha", "bravo", 0.0), ("delta", "bravo", 0.0), ("delta", "alpha", 0.0),
            ("charlie", "delta", 0.0), ("charlie", "delta", 1.0), ("charlie", "alpha", 0.0), ("alpha", "delta", 1.0),
            ("charlie", "alpha", 0.0), ("alpha", "charlie", 1.0), ("delta", "charlie", 1.0), ("delta", "charlie", 1.0)]


def test_a_lopsided_record_fits():
    rows = {r.model: r for r in leaderboard(LOPSIDED)}
    assert rows["bravo"].rating > rows["alpha"].rating > 1000  # bravo won all 7, alpha 8 of 10
    assert all(math.isfinite(r.lower) and math.isfinite(r.upper) for r in rows.values())


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.sampled_from([0.0, 0.5, 1.0])), min_size=1,
                max_size=60))
def test_any_record_gives_finite_centred_ratings_with_intervals_of_positive_width(record):
    battles = [(f"m{a}", f"m{b}", s) for a, b, s in record]
    rows = leaderboard(battles, rounds=100)
    assert rows and all(r.lower < r.rating < r.upper and r.upper - r.lower > 1 for r in rows)
    assert all(math.isfinite(r.rating) for r in rows)
    if len(rows) > 1:
        assert np.mean([r.rating for r in rows]) == pytest.approx(1000)  # the models shown average 1000
        for place, r in enumerate(rows, start=1):
            assert r.rank_best <= place <= r.rank_worst or r.rating == rows[place - 2].rating
