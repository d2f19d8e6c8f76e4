"""The adaptive format's choice of pairs (arena.suite_runs.adaptive.pick): the expected fall in
the ranking's errors that it maximises, and the pairs it picks on plain tallies."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from arena.suite_runs import adaptive


def test_the_expected_fall_for_an_even_pair_is_the_exact_one():
    # d = 0: the chance that the new estimate's sign differs from the truth's is 1/2 − asin(ρ)/π,
    # ρ² the share of the variance resolved, so the fall from 1/2 is asin(ρ)/π.
    for share, tolerance in ((0.01, 0.001), (0.1, 0.003), (0.5, 0.01), (0.8, 0.02)):
        assert math.isclose(adaptive._fall(0.0, 2.0, 2.0 * share), math.asin(math.sqrt(share)) / math.pi,
                            abs_tol=tolerance)


@given(d=st.floats(-4, 4), var=st.floats(0.01, 4), share=st.floats(0.001, 0.999))
def test_the_expected_fall_is_never_negative_nor_more_than_the_error_there_is(d, var, share):
    fall = adaptive._fall(d, var, share * var)
    assert 0 <= fall <= adaptive._wrong(d, var)


def test_more_verdicts_are_expected_to_remove_more_errors():
    falls = [adaptive._fall(0.5, 1.0, share) for share in (0.05, 0.2, 0.5, 0.8)]
    assert falls == sorted(falls) and falls[0] > 0


def scores(*games: tuple[int, int, float, int]) -> dict[tuple[int, int], tuple[float, int]]:
    """A tally from (a, b, a's points, verdicts) rows."""
    return {(a, b): (points, count) for a, b, points, count in games}


def test_pick_judges_the_pair_still_in_doubt():
    fit = adaptive.fit([1, 2, 3], scores((1, 2, 6, 6), (2, 3, 0.5, 1)))
    assert adaptive.pick(fit, [(1, 2), (1, 3), (2, 3)], 1) == [(2, 3)]


def test_pick_leaves_pairs_far_apart_and_spreads_a_batch():
    # {1, 2} well above {3, 4}; inside each group every verdict a tie.
    fit = adaptive.fit([1, 2, 3, 4], scores((1, 2, 4, 8), (3, 4, 4, 8), (1, 3, 8, 8), (1, 4, 8, 8),
                                            (2, 3, 8, 8), (2, 4, 8, 8)))
    picked = adaptive.pick(fit, [(1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)], 2)
    assert sorted(picked) == [(1, 2), (3, 4)]


def test_pick_picks_no_more_than_asked_and_nothing_twice():
    fit = adaptive.fit([1, 2, 3, 4], {})
    candidates = [(1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)]
    picked = adaptive.pick(fit, candidates, 4)
    assert len(picked) == len(set(picked)) == 4 and set(picked) <= set(candidates)
    assert adaptive.pick(fit, candidates, 0) == []
