"""The anonymous battles' pick rule (arena/battles/draw.py), pure and property-tested: never one
entry twice, only allowed and fitting pairs, exclusions honoured, the random share uniform, the
rest on the least settled pair (warm ones first among equals), sides placed at random."""

import random
from collections import Counter
from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from arena.battles import draw
from arena.battles.draw import Candidate, Record

SLUGS = [f"m{i}" for i in range(7)]

candidates_st = st.lists(
    st.builds(Candidate, st.sampled_from(SLUGS), st.floats(0, 4000, allow_nan=False), st.booleans(), st.booleans()),
    max_size=9)
records_st = st.dictionaries(st.sampled_from(list(combinations(SLUGS, 2))),
                             st.integers(1, 60).flatmap(lambda n: st.builds(Record, st.just(n), st.floats(0, n))),
                             max_size=12)


@settings(max_examples=300, deadline=None)
@given(candidates_st, records_st, st.integers(0, 2**32), st.floats(0, 1),
       st.sets(st.sampled_from(SLUGS), max_size=4), st.one_of(st.none(), st.floats(0, 8000)))
def test_a_pick_is_two_different_allowed_entries_that_fit_together(cands, records, seed, share, excluded, budget):
    pick = draw.draw(cands, records, random.Random(seed), random_share=share, excluded=excluded, budget_mb=budget)
    memory, chat = {}, {}
    for c in cands:
        memory.setdefault(c.slug, c.memory_mb)  # the first row of a slug is the one that counts
        chat.setdefault(c.slug, c.chat)
    allowed = [(a, b) for a, b in combinations(sorted(memory), 2)
               if a not in excluded and b not in excluded and chat[a] and chat[b]
               and (budget is None or memory[a] + memory[b] <= budget)]
    if not allowed:
        assert pick is None
        return
    assert pick is not None
    assert pick.left != pick.right
    assert pick.left not in excluded and pick.right not in excluded
    assert chat[pick.left] and chat[pick.right]  # never a base model staff left out of chat draws
    assert draw.key(pick.left, pick.right) in allowed
    assert pick.reason in draw.REASONS


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.floats(0, 1), st.sets(st.sampled_from(SLUGS[:5]), min_size=1, max_size=5))
def test_a_base_model_is_never_drawn_and_one_chat_model_left_makes_no_pair(seed, share, base):
    cands = [Candidate(s, chat=s not in base) for s in SLUGS[:5]]
    pick = draw.draw(cands, {}, random.Random(seed), random_share=share)
    chat = [s for s in SLUGS[:5] if s not in base]
    if len(chat) < 2:
        assert pick is None
    else:
        assert pick is not None and {pick.left, pick.right} <= set(chat)


def test_the_random_share_is_uniform_over_the_allowed_pairs():
    cands = [Candidate(s, 500) for s in SLUGS[:4]] + [Candidate("huge", 5000)]
    counts = Counter()
    for seed in range(6000):
        pick = draw.draw(cands, {}, random.Random(seed), random_share=1.0, budget_mb=2000)
        assert pick.reason == draw.RANDOM
        counts[draw.key(pick.left, pick.right)] += 1
    assert set(counts) == set(combinations(SLUGS[:4], 2))  # "huge" fits with nobody
    assert all(850 <= n <= 1150 for n in counts.values()), counts  # 1000 each expected (sd ~29)


def test_a_quarter_is_drawn_at_random_and_the_rest_goes_to_the_least_settled_pair():
    cands = [Candidate(s) for s in SLUGS[:4]]
    settled = {pair: Record(200, 190) for pair in combinations(SLUGS[:4], 2)}
    settled[("m1", "m3")] = Record(3, 1.5)  # a handful of verdicts, split: the least settled
    reasons, chosen = Counter(), Counter()
    for seed in range(4000):
        pick = draw.draw(cands, settled, random.Random(seed), random_share=0.25)
        reasons[pick.reason] += 1
        if pick.reason == draw.LEAST_SETTLED:
            chosen[draw.key(pick.left, pick.right)] += 1
    assert 0.22 < reasons[draw.RANDOM] / 4000 < 0.28
    assert set(chosen) == {("m1", "m3")}


def test_among_equally_unsettled_pairs_the_warm_ones_come_first_and_sides_are_random():
    cands = [Candidate("m0", warm=True), Candidate("m1"), Candidate("m2", warm=True), Candidate("m3")]
    picks = [draw.draw(cands, {}, random.Random(seed), random_share=0.0) for seed in range(400)]
    assert {draw.key(p.left, p.right) for p in picks} == {("m0", "m2")}  # never met: all equal; both warm
    assert {p.left for p in picks} == {"m0", "m2"}  # either may sit on the left
    one_warm = [Candidate("m0", warm=True), Candidate("m1"), Candidate("m2")]
    picks = [draw.draw(one_warm, {}, random.Random(seed), random_share=0.0) for seed in range(400)]
    assert {draw.key(p.left, p.right) for p in picks} == {("m0", "m1"), ("m0", "m2")}


def test_a_wider_interval_beats_warmth():
    cands = [Candidate("m0", warm=True), Candidate("m1", warm=True), Candidate("m2")]
    records = {("m0", "m1"): Record(40, 20), ("m0", "m2"): Record(40, 20)}  # m1-m2 never met
    for seed in range(200):
        pick = draw.draw(cands, records, random.Random(seed), random_share=0.0)
        assert draw.key(pick.left, pick.right) == ("m1", "m2")


def test_the_same_seed_gives_the_same_pick():
    cands = [Candidate(s, warm=i % 2 == 0) for i, s in enumerate(SLUGS)]
    assert all(draw.draw(cands, {}, random.Random(s), random_share=0.5)
               == draw.draw(cands, {}, random.Random(s), random_share=0.5) for s in range(50))


@given(st.integers(1, 400), st.floats(0, 1))
def test_more_verdicts_at_the_same_rate_settle_a_pair_more(n, rate):
    width = draw.interval_width(Record(n, n * rate))
    assert 0 < width < 1 == draw.interval_width(Record())
    assert draw.interval_width(Record(4 * n, 4 * n * rate)) < width


def test_tally_sums_both_orders_and_leaves_a_model_against_itself_out():
    records = draw.tally([("a", "b", 1.0), ("b", "a", 1.0), ("b", "a", 0.5), ("a", "a", 1.0)])
    assert records == {("a", "b"): Record(3, 1.5)}


def test_no_pair_when_fewer_than_two_are_allowed():
    assert draw.draw([Candidate("m0"), Candidate("m0")], {}, random.Random(1), random_share=0.5) is None
    assert draw.draw([Candidate("m0"), Candidate("m1")], {}, random.Random(1), random_share=0.5,
                     excluded={"m1"}) is None
