"""A judge's reliability from its stored readings (arena.leaderboard.reliability, pure): figures on
hand-made readings with known answers, kappa on a textbook table, the seeded bootstrap, too few
pairs, and properties over random readings."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.leaderboard import reliability as R
from arena.leaderboard.reliability import Reading

# Pairs of answers named so the left one sorts first: "first" in kappa's terms is the left answer.
PAIRS = [(f"a{i:02}", f"b{i:02}") for i in range(60)]


def judge(name, pairs, left_first, right_first):
    return [Reading(left, right, name, left_first, right_first) for left, right in pairs]


def test_kappa_on_a_textbook_table():
    # Wikipedia's example: 50 items, both say yes 20, only A yes 5, only B yes 10, both no 15:
    # observed 0.7, chance 0.5, kappa 0.4.
    rated = [(0, 0)] * 20 + [(0, 1)] * 5 + [(1, 0)] * 10 + [(1, 1)] * 15
    assert R.cohen_kappa(rated) == pytest.approx(0.4)
    # Three answers, 100 items, worked by hand: rows 50/30/20, columns 60/30/10, so chance
    # agreement (50·60 + 30·30 + 20·10) / 100² = 0.41; observed (44 + 20 + 6) / 100 = 0.70.
    table = {(0, 0): 44, (0, 1): 5, (0, 2): 1, (1, 0): 7, (1, 1): 20, (1, 2): 3, (2, 0): 9, (2, 1): 5, (2, 2): 6}
    rated = [cell for cell, n in table.items() for _ in range(n)]
    assert R.cohen_kappa(rated) == pytest.approx((0.70 - 0.41) / (1 - 0.41))
    assert R.cohen_kappa([]) is None and R.cohen_kappa([(1, 1)] * 5) is None  # one answer every time: undefined


def test_the_bootstrap_interval_is_seeded_and_holds_the_value():
    rated = [(0, 0)] * 20 + [(0, 1)] * 5 + [(1, 0)] * 10 + [(1, 1)] * 15
    low, high = R.bootstrap_kappa(rated, seed=7)
    assert (low, high) == R.bootstrap_kappa(rated, seed=7)
    assert -1 <= low < 0.4 < high <= 1
    # Its width is what 50 items allow: about ±0.25 (the normal approximation's SE is 0.13).
    assert 0.35 < high - low < 0.65
    assert R.bootstrap_kappa([], seed=1) == (None, None)


def test_figures_of_hand_made_judges():
    pairs = PAIRS[:12]
    readings = [
        *judge("first-shown", pairs, "left", "right"),  # always the answer shown first
        *judge("steady", pairs, "left", "left"),  # always the left answer, wherever shown
        *judge("cautious", pairs[:3], "tie", "tie"), *judge("cautious", pairs[3:], "left", "left"),
    ]
    report = R.reliability(readings, seed=1)
    by = {f.judge: f for f in report.judges}
    assert list(by) == ["first-shown", "steady", "cautious"] and report.min_pairs == R.MIN_PAIRS
    first = by["first-shown"]
    assert (first.pairs, first.readings, first.decisive) == (12, 24, 24)
    assert first.self_consistency == 0 and first.position_bias == 1 and first.tie_rate == 0
    steady = by["steady"]
    assert steady.self_consistency == 1 and steady.position_bias == 0.5 and steady.tie_rate == 0
    cautious = by["cautious"]
    assert cautious.self_consistency == 1 and cautious.tie_rate == 0.25 and cautious.decisive == 18
    # Between judges. steady always names one answer; cautious the same on 9 of 12 pairs, a tie
    # on 3. Counted both ways round, steady names each answer of a pair half the time and cautious
    # 3/8 each, no winner 1/4: chance agreement 2 x 1/2 x 3/8 = 0.375, observed 0.75:
    # kappa (0.75 - 0.375) / 0.625 = 0.6.
    between = {(a, b): k for a, b, k in report.between}
    assert between[("steady", "cautious")].value == pytest.approx(0.6)
    # first-shown's verdicts are all ties (its orders disagree), steady's never: observed and
    # chance agreement both 0, kappa 0.
    assert between[("first-shown", "steady")].value == pytest.approx(0)
    assert between[("first-shown", "steady")].pairs == 12 and len(report.between) == 3


def test_agreement_with_people_is_kappa_on_pairs_both_judged():
    pairs = PAIRS[:50]
    judged, people = [], []
    cells = [("left", "left")] * 20 + [("left", "right")] * 5 + [("right", "left")] * 10 + [("right", "right")] * 15
    for (left, right), (judge_says, person_says) in zip(pairs, cells, strict=True):
        judged.append(Reading(left, right, "j", judge_says, judge_says))
        # People's verdicts name the answers, whichever side they were shown on.
        people.append((right, left, "left" if person_says == "right" else "right"))
    people.append(("x", "y", "left"))  # a pair the judge never read: not counted
    people.append(("zz", "zz2", ""))  # no verdict
    [figures] = R.reliability(judged, people, seed=3).judges
    # Both ways round the table is [[35, 15], [15, 35]] of 100: observed 0.7, chance 0.5: 0.4 again.
    assert figures.people.pairs == 50 and figures.people.value == pytest.approx(0.4)
    assert figures.people.low < 0.4 < figures.people.high


def test_the_latest_reading_and_the_latest_verdict_count():
    pairs = PAIRS[:10]
    readings = judge("j", pairs, "right", "right") + judge("j", pairs, "left", "left")  # read again later
    people = [(left, right, "right") for left, right in pairs] + [(left, right, "left") for left, right in pairs]
    [figures] = R.reliability(readings, people).judges
    assert figures.pairs == 10 and figures.people.pairs == 10
    assert figures.people.value == pytest.approx(1)  # the latest of each agree on every pair


def test_too_few_pairs_gives_no_kappa_but_every_share_with_its_interval():
    readings = judge("j", PAIRS[:R.MIN_PAIRS - 1], "left", "left")
    [figures] = R.reliability(readings, [(a, b, "left") for a, b in PAIRS[:R.MIN_PAIRS - 1]]).judges
    assert figures.pairs == R.MIN_PAIRS - 1
    assert figures.people.value is None and figures.people.pairs == R.MIN_PAIRS - 1
    # The shares are counts, given however few (a page's headline and table read the same ones):
    # the interval, not a hidden figure, says how little nine pairs show.
    assert (figures.consistent.count, figures.consistent.total) == (R.MIN_PAIRS - 1, R.MIN_PAIRS - 1)
    assert figures.self_consistency == 1 and figures.consistent.low < 0.75
    assert figures.verdict == R.NOT_ENOUGH
    assert R.reliability(readings, min_pairs=5).judges[0].verdict == R.RELIABLE


def test_stored_readings_become_one_reading_per_judge():
    stored = [{"order": "left_first", "raw": "x", "verdict": "left"},  # before juries: the battle's judge
              {"order": "right_first", "raw": "y", "verdict": "right"},
              {"order": "left_first", "raw": "z", "verdict": "tie", "judge": "b", "reason": "even"},
              {"order": "right_first", "raw": "", "verdict": "tie", "judge": "b", "reason": ""}]  # failed
    first, second = R.readings_of(1, 2, stored, "a")
    assert first == Reading(1, 2, "a", "left", "right") and first.verdict == "tie"
    assert second == Reading(1, 2, "b", "tie", "") and not second.both and second.verdict == ""
    [b] = [f for f in R.reliability([first, second], min_pairs=1).judges if f.judge == "b"]
    assert b.pairs == 0 and b.readings == 1  # a failed reading is not a reading


ratings = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=60)


@given(ratings)
def test_kappa_is_bounded_symmetric_and_one_on_identical_varied_answers(rated):
    value = R.cohen_kappa(rated)
    swapped = R.cohen_kappa([(b, a) for a, b in rated])
    assert (value is None) == (swapped is None)
    if value is not None:
        assert -1 - 1e-9 <= value <= 1 + 1e-9 and math.isclose(value, swapped, abs_tol=1e-9)
    same = [(a, a) for a, _b in rated]
    if len({a for a, _ in same}) > 1:
        assert R.cohen_kappa(same) == pytest.approx(1)


@given(ratings, st.integers(0, 2**32 - 1))
def test_the_bootstrap_interval_is_ordered_and_bounded(rated, seed):
    for symmetric in (False, True):
        low, high = R.bootstrap_kappa(rated, seed=seed, resamples=200, symmetric=symmetric)
        if low is not None:
            assert -1 - 1e-9 <= low <= high <= 1 + 1e-9


def swap(answer: int) -> int:
    return {R.FIRST: R.SECOND, R.SECOND: R.FIRST}.get(answer, answer)


@given(ratings, st.lists(st.booleans(), min_size=60, max_size=60))
def test_kappa_both_ways_round_does_not_depend_on_how_pairs_are_written(rated, flips):
    # Writing a pair the other way round swaps FIRST and SECOND in both raters' answers.
    flipped = [(swap(a), swap(b)) if flip else (a, b) for (a, b), flip in zip(rated, flips, strict=False)]
    value, again = R.cohen_kappa(rated, symmetric=True), R.cohen_kappa(flipped, symmetric=True)
    assert (value is None) == (again is None)
    if value is not None:
        assert math.isclose(value, again, abs_tol=1e-9)


verdict = st.sampled_from(["left", "right", "tie", "both_bad", ""])


@given(st.lists(st.tuples(st.integers(0, 30), verdict, verdict), min_size=1, max_size=80))
def test_shares_are_shares_and_a_position_reader_is_caught(rows):
    readings = [Reading(f"a{i:02}", f"b{i:02}", "j", lf, rf) for i, lf, rf in rows]
    [f] = R.reliability(readings, min_pairs=1).judges
    for share in (f.self_consistency, f.position_bias, f.tie_rate):
        assert share is None or 0 <= share <= 1
    assert f.decisive <= f.readings <= 2 * len({i for i, *_ in rows})
    # The same pairs read by a judge that always names the answer shown first: bias 1, consistency 0.
    mirror = [Reading(r.left, r.right, "pos", "left", "right") for r in readings]
    [p] = R.reliability(mirror, min_pairs=1).judges
    assert p.position_bias == 1 and p.self_consistency == 0 and p.tie_rate == 0
