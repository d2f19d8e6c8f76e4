"""Uncertainty in words (arena.leaderboard.uncertainty): rank ranges from the posterior draws, the
provisional mark's threshold, and how many more verdicts would separate two entries. The
separation count is checked against a Wilson interval written here from its formula."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.leaderboard import uncertainty as U
from arena.leaderboard.ratings import PRIOR_PRECISION, leaderboard

Z = 1.959963984540054
rates = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
counts = st.integers(min_value=0, max_value=100_000)


def wilson_lower_upper(p: float, n: int) -> tuple[float, float]:
    """The Wilson score interval, from its textbook formula."""
    denominator = 1 + Z ** 2 / n
    centre = p + Z ** 2 / (2 * n)
    spread = Z * math.sqrt(p * (1 - p) / n + Z ** 2 / (4 * n ** 2))
    return (centre - spread) / denominator, (centre + spread) / denominator


def excludes_half(p: float, n: int) -> bool:
    low, high = wilson_lower_upper(p, n)
    return low > 0.5 or high < 0.5


# --- Words ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("n", "word"), [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (10, "10th"), (11, "11th"),
                                         (12, "12th"), (13, "13th"), (21, "21st"), (22, "22nd"), (23, "23rd"),
                                         (101, "101st"), (111, "111th"), (112, "112th")])
def test_ordinals(n, word):
    assert U.ordinal(n) == word


def test_rank_words():
    assert U.rank_words(1, 1) == "1st"
    assert U.rank_words(2, 4) == "2nd–4th"
    assert U.rank_words(11, 13) == "11th–13th"


# --- Rank ranges ---------------------------------------------------------------------------------

def test_rank_ranges_are_the_middle_95_percent_of_the_bootstrap_ranks():
    # 200 resamples of four entries: A always first; B and C swap places half the time; D last
    # but once in 200 third (under 2.5%: outside its range).
    rows = []
    for r in range(200):
        b, c = (1200.0, 1100.0) if r % 2 else (1100.0, 1200.0)
        d = 1150.0 if r == 7 else 900.0
        rows.append([1500.0, b, c, d])
    samples = np.array(rows)
    point = np.array([1500.0, 1160.0, 1150.0, 900.0])
    assert U.rank_ranges(samples, point) == [(1, 1), (2, 3), (2, 3), (4, 4)]


def test_a_rank_range_holds_the_entry_s_place_in_the_table():
    # The resamples always put the second entry third, yet its point rating is second.
    samples = np.array([[3.0, 1.0, 2.0]] * 50)
    assert U.rank_ranges(samples, np.array([3.0, 2.5, 2.0])) == [(1, 1), (2, 3), (2, 3)]
    assert U.rank_ranges(np.empty((0, 2)), np.array([1.0, 2.0])) == [(2, 2), (1, 1)]
    assert U.rank_ranges(np.empty((0, 0)), np.array([])) == []


def test_equal_ratings_share_the_better_rank():
    assert U.sample_ranks(np.array([[1.0, 1.0, 0.5]])).tolist() == [[1, 1, 3]]


def synthetic(seed: int, n: int) -> list[tuple[str, str, float]]:
    truth = {"alpha": 1400.0, "bravo": 1050.0, "charlie": 1040.0, "delta": 700.0}
    rng = random.Random(seed)
    battles = []
    for _ in range(n):
        a, b = rng.sample(sorted(truth), 2)
        battles.append((a, b, float(rng.random() < U.expected_rate(truth[a], truth[b]))))
    return battles


def test_the_leaderboard_s_rank_ranges_are_the_ranks_of_its_posterior_draws():
    """Recomputed here: draws of the normal with the rows' ratings and the covariance written here
    from the formula (the inverse of the negative Hessian of the log-posterior, centred), each
    model's ranks across them, their 2.5th and 97.5th percentiles. The draws differ from the
    leaderboard's, so the record is chosen to keep every percentile clear of a rank boundary."""
    battles = synthetic(seed=5, n=400)
    rows = leaderboard(battles, seed=3)
    models = [r.model for r in rows]
    idx = {m: i for i, m in enumerate(models)}
    theta = np.array([(r.rating - 1000) * math.log(10) / 400 for r in rows])
    information = PRIOR_PRECISION * np.eye(len(models))
    for a, b, _s in battles:
        p = 1 / (1 + math.exp(theta[idx[b]] - theta[idx[a]]))
        for i, j, sign in ((idx[a], idx[a], 1), (idx[b], idx[b], 1), (idx[a], idx[b], -1), (idx[b], idx[a], -1)):
            information[i, j] += sign * p * (1 - p)
    centre = np.eye(len(models)) - 1 / len(models)
    covariance = centre @ np.linalg.inv(information) @ centre * (400 / math.log(10)) ** 2
    for r in rows:
        assert r.sd == pytest.approx(math.sqrt(covariance[idx[r.model], idx[r.model]]), rel=1e-4)
    draws = np.random.default_rng(11).multivariate_normal([r.rating for r in rows], covariance, 20000)
    ranks = 1 + (draws[:, None, :] > draws[:, :, None]).sum(axis=2)
    for r in rows:
        column = ranks[:, idx[r.model]]
        expected = (math.floor(np.percentile(column, 2.5)), math.ceil(np.percentile(column, 97.5)))
        assert (r.rank_best, r.rank_worst) == expected, r
    by_model = {row.model: row for row in rows}
    assert by_model["alpha"].rank_range == "1st" and by_model["delta"].rank_range == "4th"
    assert by_model["bravo"].rank_range == by_model["charlie"].rank_range == "2nd–3rd"  # 10 points apart


# --- Provisional ---------------------------------------------------------------------------------

def test_provisional_below_the_threshold_only():
    assert U.provisional(29, 30) and not U.provisional(30, 30) and not U.provisional(31, 30)
    assert not U.provisional(0, 0)


def test_below_the_floor_the_rank_reads_not_enough_verdicts():
    assert U.rank_shown(1, 29, 30) == "not enough verdicts" == U.NOT_ENOUGH_VERDICTS
    assert U.rank_shown(1, 30, 30) == "1" and U.rank_shown(3, 500, 30) == "3"


# --- Separation ----------------------------------------------------------------------------------

def test_known_counts():
    assert U.verdicts_to_separate(1.0) == 4  # 3 straight wins are not enough, 4 are
    assert U.verdicts_to_separate(0.0) == 4
    assert U.verdicts_to_separate(0.75) == 16
    assert U.verdicts_to_separate(0.6) == 97
    assert U.verdicts_to_separate(0.5) is None
    with pytest.raises(ValueError):
        U.verdicts_to_separate(1.2)
    with pytest.raises(ValueError):
        U.separation(0.6, -1)


def test_separation_states():
    more = U.separation(0.75, 4)
    assert (more.needed, more.more, more.separated) == (16, 12, False)
    assert more.lower == pytest.approx(wilson_lower_upper(0.75, 4)[0])
    done = U.separation(0.75, 16)
    assert done.separated and done.more == 0
    even = U.separation(0.5, 40)
    assert even.needed is None and even.more is None and not even.separated
    unmet = U.separation(0.6, 0)
    assert unmet.lower is None and unmet.more == 97


@settings(max_examples=400, deadline=None)
@given(rates)
def test_the_count_is_where_the_wilson_interval_first_leaves_out_one_half(p):
    needed = U.verdicts_to_separate(p)
    if needed is None:
        assert p == 0.5
        return
    threshold = Z ** 2 / (4 * (p - 0.5) ** 2)
    if abs(threshold - round(threshold)) < 1e-6 * max(1.0, threshold):
        return  # on the boundary to rounding error: either side may be right
    assert excludes_half(p, needed)
    if needed > 1:
        assert not excludes_half(p, needed - 1)


@settings(max_examples=400, deadline=None)
@given(rates, rates, counts)
def test_monotone_in_the_distance_from_one_half_and_never_negative(p, q, given_):
    near, far = sorted((p, q), key=lambda r: abs(r - 0.5))
    near_more, far_more = U.separation(near, given_).more, U.separation(far, given_).more
    assert far_more is not None or near_more is None  # farther from 1/2 is never "never" unless both are
    for more in (near_more, far_more):
        assert more is None or more >= 0
    if near_more is not None and far_more is not None:
        assert far_more <= near_more


@settings(max_examples=200, deadline=None)
@given(rates, counts)
def test_symmetric_and_fewer_left_as_more_are_given(p, given_):
    assert U.verdicts_to_separate(p) == U.verdicts_to_separate(1 - p)
    now, later = U.separation(p, given_).more, U.separation(p, given_ + 1).more
    if now is None:
        assert later is None
    else:
        assert later == max(0, now - 1)


def test_pair_estimate_uses_the_head_to_head_rate_or_the_ratings_prediction():
    ratings = {"a": 1100.0, "b": 1000.0, "c": 1000.0}
    cells = {("a", "b"): (0.75, 4), ("b", "a"): (0.25, 4)}
    met = U.pair_estimate("a", "b", ratings, cells)
    assert met.met and met.separation.rate == 0.75 and met.separation.more == 12
    flipped = U.pair_estimate("b", "a", ratings, cells)
    assert flipped.separation.rate == 0.25 and flipped.separation.more == 12
    unmet = U.pair_estimate("a", "c", ratings, cells)
    assert not unmet.met and unmet.separation.given == 0
    assert unmet.separation.rate == pytest.approx(1 / (1 + 10 ** (-100 / 400)))
    assert U.pair_estimate("b", "c", ratings, cells).separation.needed is None  # equal ratings: 50%
    assert U.pair_estimate("a", "a", ratings, cells) is None
    assert U.pair_estimate("a", "zulu", ratings, cells) is None


def test_default_pair_is_the_top_two():
    assert U.default_pair(["x", "y", "z"]) == ("x", "y")
    assert U.default_pair(["x"]) == ("", "")
