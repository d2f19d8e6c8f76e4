"""A judge checked before it counts (arena.leaderboard.reliability, pure): the Wilson interval of
each share, the verdict's rule (reliable, unreliable, not enough readings) and its sentence, on
hand-made judges with known answers and on random readings."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.leaderboard import reliability as R
from arena.leaderboard.reliability import Reading, Share

PAIRS = [(f"a{i:02}", f"b{i:02}") for i in range(60)]


def judge(name, pairs, left_first, right_first):
    return [Reading(left, right, name, left_first, right_first) for left, right in pairs]


def figures_of(readings, **kwargs):
    [figures] = R.reliability(readings, **kwargs).judges
    return figures


def test_wilson_on_known_values():
    # Worked by hand (z = 1.959964): 0 of 10 -> [0, z²/(n+z²)] = [0, 0.2775]; 18 of 18 -> [18/(18+z²), 1].
    assert R.wilson(0, 10) == pytest.approx((0.0, 0.27753), abs=1e-5)
    assert R.wilson(18, 18) == pytest.approx((0.82412, 1.0), abs=1e-5)
    # 50 of 100: 0.5 ± 0.0960 (Wilson's centre stays at 0.5, its half-width just under 1.96·0.05).
    assert R.wilson(50, 100) == pytest.approx((0.40383, 0.59617), abs=1e-5)
    assert R.wilson(0, 0) is None and Share(0, 0).value is None and Share(0, 0).low is None


def test_an_always_a_judge_is_unreliable_in_words_with_its_figures():
    # "A" on every reading: with the left answer shown first that is left, with the right first right.
    always_a = figures_of(judge("always-a", PAIRS[:9], "left", "right"))
    assert (always_a.first.count, always_a.first.total) == (18, 18)
    assert (always_a.consistent.count, always_a.consistent.total) == (0, 9)
    assert always_a.verdict == R.UNRELIABLE and always_a.unreliable
    assert always_a.sentence == ("This judge picked the answer shown first in 18 of 18 readings: "
                                 "its verdicts say nothing about the answers.")
    # One that always names the answer shown second is no better.
    always_b = figures_of(judge("always-b", PAIRS[:9], "right", "left"))
    assert always_b.verdict == R.UNRELIABLE and "shown second in 18 of 18 readings" in always_b.sentence


def test_three_pairs_show_too_little_to_call_either_way():
    # 6 of 6 first: the interval reaches down to 61%; 0 of 3 consistent: up to 56%.
    few = figures_of(judge("j", PAIRS[:3], "left", "right"))
    assert few.verdict == R.NOT_ENOUGH
    assert few.sentence == "Only 3 pairs read both ways, of the 10 needed to call it reliable."


def test_a_steady_judge_on_enough_pairs_is_reliable():
    readings = judge("j", PAIRS[:6], "left", "left") + judge("j", PAIRS[6:12], "right", "right")
    steady = figures_of(readings)
    assert steady.verdict == R.RELIABLE
    assert steady.sentence == ("No sign of reading positions: it agreed with itself on 12 of 12 pairs and "
                               "picked the answer shown first in 12 of 24 readings.")


def test_a_judge_of_ties_or_of_disagreement_is_unreliable():
    ties = figures_of(judge("j", PAIRS[:12], "tie", "tie"))
    assert ties.verdict == R.UNRELIABLE and ties.sentence.startswith("This judge said a tie in 24 of 24 readings")
    # Half its pairs read by position (first, then the other way round: no bias overall), half a tie in
    # one order: agreeing with itself on none.
    torn = judge("k", PAIRS[:6], "left", "right") + judge("k", PAIRS[6:12], "right", "left") \
        + judge("k", PAIRS[12:18], "tie", "left") + judge("k", PAIRS[18:24], "tie", "right")
    torn_figures = figures_of(torn)
    assert torn_figures.consistent.count == 0 and torn_figures.first.value == pytest.approx(0.5)
    assert torn_figures.verdict == R.UNRELIABLE and "agreed with itself on only 0 of 24 pairs" in torn_figures.sentence


def test_unreliable_names_only_the_judges_the_rule_marks():
    readings = judge("always-a", PAIRS[:9], "left", "right") + judge("steady", PAIRS[:12], "left", "left")
    assert R.unreliable(readings) == {"always-a"}


@given(st.integers(0, 400), st.integers(0, 400))
def test_the_wilson_interval_holds_its_share_within_zero_and_one(count, extra):
    total = count + extra
    bounds = R.wilson(count, total)
    if total == 0:
        assert bounds is None
        return
    low, high = bounds
    assert 0 <= low <= count / total <= high <= 1
    assert high - low > 0  # never zero-width, even at 0 of n or n of n
    # More of the same evidence narrows it.
    wider_low, wider_high = R.wilson(count, total)
    narrow_low, narrow_high = R.wilson(4 * count, 4 * total)
    assert narrow_high - narrow_low <= wider_high - wider_low + 1e-12


verdict = st.sampled_from(["left", "right", "tie", "both_bad", ""])


@given(st.lists(st.tuples(st.integers(0, 40), verdict, verdict), min_size=1, max_size=100))
def test_the_verdict_follows_its_rule_on_any_readings(rows):
    readings = [Reading(f"a{i:02}", f"b{i:02}", "j", lf, rf) for i, lf, rf in rows]
    f = figures_of(readings)
    fired = (f.first.above(R.POSITION_LIMIT) or f.first.below(1 - R.POSITION_LIMIT)
             or f.consistent.below(R.CONSISTENCY_LIMIT) or f.ties.above(R.TIE_LIMIT))
    if fired:
        assert f.verdict == R.UNRELIABLE and f.sentence.startswith("This judge")
    elif f.pairs < R.MIN_PAIRS:
        assert f.verdict == R.NOT_ENOUGH
    else:
        assert f.verdict == R.RELIABLE
    # Every figure in the sentence is one of the shares' counts: the words and the table agree.
    for share in (f.first, f.consistent, f.ties):
        assert share.count <= share.total
    assert f.consistent.total == f.pairs and f.ties.total == f.readings and f.first.total == f.decisive


@given(st.integers(8, 40))
def test_a_position_reader_on_eight_pairs_or_more_is_always_caught(n):
    f = figures_of(judge("pos", PAIRS[:n], "left", "right"))
    assert f.verdict == R.UNRELIABLE
    assert f.sentence == (f"This judge picked the answer shown first in {2 * n} of {2 * n} readings: "
                          "its verdicts say nothing about the answers.")
    assert math.isclose(f.first.low, 2 * n / (2 * n + R.Z ** 2))
