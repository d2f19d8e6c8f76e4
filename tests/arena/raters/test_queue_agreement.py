"""The pure cores of rater links: each link's queue (both ways round across raters, no pair
twice) and the agreement between raters (Cohen's and Fleiss' kappa, on data whose answer is known)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.raters.agreement import FLOOR, agreement
from arena.raters.queue import a_side, queue

PAIRS = [(f"l{i}", f"r{i}") for i in range(40)]


def test_adjacent_links_see_every_pair_opposite_ways_round():
    for key in PAIRS:
        assert {a_side(key, 0), a_side(key, 1)} == {"left", "right"}
        assert a_side(key, 0) == a_side(key, 2)
    # and within one link, both ways occur
    assert {side for _key, side in queue(PAIRS, set(), 0, seed=1)} == {"left", "right"}


@given(st.sets(st.integers(0, 39)), st.integers(0, 10), st.integers(0, 2**31))
def test_a_queue_holds_each_unjudged_pair_once(judged_idx, position, seed):
    judged = {PAIRS[i] for i in judged_idx}
    keys = [key for key, _side in queue(PAIRS + PAIRS[:5], judged, position, seed)]
    assert len(keys) == len(set(keys)) and set(keys) == set(PAIRS) - judged


def test_queues_are_shuffled_per_link_and_stable():
    assert queue(PAIRS, set(), 0, 1) == queue(PAIRS, set(), 0, 1)
    assert [k for k, _ in queue(PAIRS, set(), 0, 1)] != [k for k, _ in queue(PAIRS, set(), 0, 2)]


def test_cohen_kappa_of_a_known_table():
    # 50 items: both "yes" 20, A yes / B no 5, A no / B yes 10, both "no" 15: kappa = 0.4.
    cells = [("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10 + [("no", "no")] * 15
    found = agreement({"a": {i: x for i, (x, _) in enumerate(cells)}, "b": {i: y for i, (_, y) in enumerate(cells)}})
    assert found.method == "cohen" and found.shared == 50
    assert found.kappa == pytest.approx(0.4)
    assert found.low < 0.4 < found.high and found.low >= -1 and found.high <= 1


def test_perfect_agreement_is_one_and_the_interval_collapses():
    verdicts = {i: ["left", "right", "tie", "both_bad"][i % 4] for i in range(20)}
    found = agreement({"a": verdicts, "b": dict(verdicts), "c": dict(verdicts)})
    assert found.method == "fleiss" and found.kappa == pytest.approx(1.0)
    assert found.low == pytest.approx(1.0) and found.high == pytest.approx(1.0)


def test_fleiss_kappa_of_the_textbook_table():
    # Fleiss (1971) as on Wikipedia: 10 items, 14 raters, 5 categories; kappa = 0.210.
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    ratings: dict[int, dict[int, str]] = {r: {} for r in range(14)}
    for item, counts in enumerate(table):
        labels = [str(c) for c, n in enumerate(counts) for _ in range(n)]
        for rater, label in enumerate(labels):
            ratings[rater][item] = label
    found = agreement(ratings)
    assert found.method == "fleiss" and found.shared == 10
    assert found.kappa == pytest.approx(0.2099, abs=1e-4)


def test_independent_raters_agree_about_as_chance_does():
    import random

    rng = random.Random(7)
    outcomes = ["left", "right", "tie", "both_bad"]
    found = agreement({"a": {i: rng.choice(outcomes) for i in range(400)},
                       "b": {i: rng.choice(outcomes) for i in range(400)}})
    assert abs(found.kappa) < 0.1 and found.low < 0 < found.high


def test_too_few_shared_pairs_and_a_single_rater():
    assert agreement({"a": {1: "left"}}) is None
    few = agreement({"a": dict.fromkeys(range(FLOOR - 1), "left"), "b": dict.fromkeys(range(FLOOR - 1), "right")})
    assert few.too_few and few.kappa is None and few.shared == FLOOR - 1


def test_the_interval_is_seeded():
    data = {"a": {i: "left" if i % 3 else "tie" for i in range(30)},
            "b": {i: "left" if i % 4 else "tie" for i in range(30)}}
    assert agreement(data, seed=3) == agreement(data, seed=3)


@given(st.dictionaries(st.integers(0, 30), st.sampled_from("LRTB"), min_size=5),
       st.dictionaries(st.integers(0, 30), st.sampled_from("LRTB"), min_size=5))
def test_kappa_is_symmetric_and_bounded(one, two):
    ab, ba = agreement({"a": one, "b": two}, resamples=20), agreement({"b": two, "a": one}, resamples=20)
    assert ab.shared == ba.shared
    if ab.kappa is not None:
        assert ab.kappa == pytest.approx(ba.kappa) and -1 - 1e-9 <= ab.kappa <= 1 + 1e-9
