"""The adaptive and Swiss formats of the suite run planner (arena.suite_runs.plan, with the
ratings and pairings of arena.suite_runs.adaptive): pure, driven by a small simulation of a run."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from arena.suite_runs import adaptive
from arena.suite_runs import plan as P
from tests.arena.suite_runs.simulation import drive


def stronger_wins(key) -> str:
    """A judge that always prefers the contestant with the lower id, in both orders."""
    _, left, right, _ = key
    return P.LEFT if left < right else P.RIGHT


def stored(state: P.RunState, rng: random.Random) -> P.RunState:
    """`state` as the runner reads it back from the database: the same rows, in any order."""
    def shuffled(d: dict) -> dict:
        items = list(d.items())
        rng.shuffle(items)
        return dict(items)

    return P.RunState(prompts=list(state.prompts), contestants=list(state.contestants), format=state.format,
                      judged=state.judged, answers=shuffled(state.answers), judgements=shuffled(state.judgements),
                      verdicts=shuffled(state.verdicts), seed=state.seed, budget=state.budget)


# --- adaptive --------------------------------------------------------------------------------------
def test_adaptive_stops_once_every_adjacent_pair_is_separated():
    state = P.RunState(prompts=list(range(1, 21)), contestants=[1, 2, 3, 4], format=P.ADAPTIVE, budget=10_000)
    plans, started = drive(state, verdict=stronger_wins)
    last = plans[-1]
    assert last.stopped == P.SEPARATED and last.done == last.total
    judgements = [k for k in started if len(k) == 4]
    assert last.calls == len(judgements) < 2 * 6 * 20  # fewer than a round robin's
    results = adaptive.tally((a, b, P._score(o)) for (_, a, b), o in state.verdicts.items())
    fit = adaptive.fit(state.contestants, results)
    assert fit.ranking() == [1, 2, 3, 4] and all(fit.separated(a, b) for a, b in fit.adjacent())


def test_adaptive_spends_no_more_than_its_budget_and_says_so():
    state = P.RunState(prompts=[1, 2, 3], contestants=[1, 2, 3], format=P.ADAPTIVE, budget=7)
    plans, _ = drive(state, verdict=lambda key: P.LEFT)  # the orders disagree: ties, never separated
    assert plans[-1].stopped == P.BUDGET_SPENT and plans[-1].calls == 6  # a fourth pair needs 2, 1 is left
    assert plans[-1].done == plans[-1].total == 9 + 6


def test_adaptive_with_no_prompt_left_says_so():
    state = P.RunState(prompts=[1], contestants=[1, 2, 3], format=P.ADAPTIVE, budget=100)
    plans, _ = drive(state, verdict=lambda key: P.LEFT)
    assert plans[-1].stopped == P.EXHAUSTED and len(state.verdicts) == 3  # every pair on the only prompt


def test_adaptive_default_budget_is_half_a_round_robin():
    state = P.RunState(prompts=[1, 2], contestants=[1, 2, 3, 4], format=P.ADAPTIVE)
    assert P.budget_of(state) == 6 * 2 * 2 // 2
    assert P.plan(state, 4).total == 8 + 12


def test_adaptive_judges_the_adjacent_pair_least_resolved_on_a_prompt_it_has_not_judged():
    state = P.RunState(prompts=list(range(1, 7)), contestants=[1, 2, 3], format=P.ADAPTIVE, seed=9, budget=1000)
    state.answers = {(p, c): P.Slot(P.DONE, 1) for p in state.prompts for c in state.contestants}
    for p in range(1, 7):  # 1 beat 2 six times, 2 and 3 tied once
        state.verdicts[(p, 1, 2)] = P.LEFT
    state.verdicts[(4, 2, 3)] = "tie"
    step = P.plan(state, in_flight=2)
    assert {k[1:3] for k in step.start_judgements} == {(2, 3)}
    [prompt] = {k[0] for k in step.start_judgements}
    assert prompt != 4 and sorted(k[3] for k in step.start_judgements) == sorted(P.ORDERS)


def test_adaptive_gives_up_a_failed_reading_when_no_call_is_left():
    state = P.RunState(prompts=[1], contestants=[1, 2], format=P.ADAPTIVE, budget=2)
    plans, started = drive(state, fail=lambda key: len(key) == 4 and key[3] == "right_first")
    assert started.count((1, 1, 2, "right_first")) == 1  # no retry: it would be a third call
    assert state.verdicts == {(1, 1, 2): "tie"} and plans[-1].calls == 2


def test_fit_is_the_same_whatever_order_the_results_come_in():
    results = [(1, 2, 1.0), (2, 3, 0.5), (1, 3, 1.0), (3, 4, 0.0), (2, 4, 1.0)]
    forward = adaptive.fit([1, 2, 3, 4], adaptive.tally(results))
    backward = adaptive.fit([1, 2, 3, 4], dict(reversed(list(adaptive.tally(results).items()))))
    assert forward == backward
    assert forward.ranking()[0] == 1 and forward.wrong_order(1, 2) < 0.5


# --- Swiss -----------------------------------------------------------------------------------------
def test_swiss_rounds():
    assert [adaptive.swiss_rounds(n) for n in (8, 9, 16)] == [4, 5, 5]


def test_swiss_pairs_similar_scores_and_avoids_rematches():
    contestants = list(range(1, 9))
    scores = {1: 3, 2: 3, 3: 2, 4: 2, 5: 1, 6: 1, 7: 0, 8: 0}
    pairs, bye = adaptive.swiss_pairing(contestants, scores, set(), set())
    assert pairs == [(1, 2), (3, 4), (5, 6), (7, 8)] and bye is None
    pairs, _ = adaptive.swiss_pairing(contestants, scores, {frozenset((1, 2))}, set())
    assert pairs[0] == (1, 3) and frozenset((1, 2)) not in {frozenset(p) for p in pairs}


def test_swiss_bye_goes_to_the_lowest_score_without_one():
    contestants = list(range(1, 10))
    scores = {c: 10 - c for c in contestants}
    assert adaptive.swiss_pairing(contestants, scores, set(), set())[1] == 9
    assert adaptive.swiss_pairing(contestants, scores, set(), {9})[1] == 8


def test_swiss_run_plays_its_rounds_on_the_seeds_prompts():
    state = P.RunState(prompts=list(range(1, 9)), contestants=list(range(1, 9)), format=P.SWISS, seed=4)
    plans, _ = drive(state, verdict=stronger_wins)
    rounds = P.swiss_schedule(state)
    assert len(rounds) == 4 and all(r.complete for r in rounds)
    assert sorted(p for r in rounds for p in r.prompts) == list(range(1, 9))  # 2 prompts a round, each once
    assert len(state.verdicts) == 4 * 4 * 2 and plans[-1].done == plans[-1].total
    # Round 2 pairs round 1's winners with each other: the stronger (lower id) won every pair.
    winners = {a for a, _ in rounds[0].pairs}
    assert {c for pair in rounds[1].pairs[:2] for c in pair} == winners


# --- properties ------------------------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(st.integers(2, 7), st.integers(1, 5), st.sampled_from([P.ADAPTIVE, P.SWISS]), st.integers(1, 5),
       st.one_of(st.none(), st.integers(2, 40)), st.sets(st.tuples(st.integers(1, 5), st.integers(0, 6))),
       st.floats(0, 0.4), st.randoms(use_true_random=False))
def test_every_adaptive_or_swiss_run_ends_within_budget_and_never_judges_twice(
        n, prompts, fmt, window, budget, failing, judge_fails, rng):
    state = P.RunState(prompts=list(range(1, prompts + 1)), contestants=list(range(n)), format=fmt,
                       seed=rng.randrange(100), budget=budget if fmt == P.ADAPTIVE else None)
    limit = P.budget_of(state) if fmt == P.ADAPTIVE else None
    recorded: list = []
    for _ in range(5_000):
        step = P.plan(state, window)
        if limit is not None:
            assert step.calls <= limit
        if step.finished:
            break
        started = step.start_answers + step.start_judgements
        assert len(set(started)) == len(started) and len(started) + P._live(state) <= window
        assert all(state.judgement(k).wants_start for k in step.start_judgements)
        assert not any(pair in state.verdicts for pair, _ in step.record)
        recorded += [pair for pair, _ in step.record]
        for key in step.start_answers:
            state.answers[key] = P.Slot(P.FAILED if key in failing else P.DONE, state.answer(key).attempts + 1)
        for key in step.start_judgements:  # some stay live for a step, some fail
            slot = state.judgement(key)
            roll = rng.random()
            if roll < 0.2:
                state.judgements[key] = P.Slot(P.LIVE, slot.attempts + 1)
            elif roll < 0.2 + judge_fails:
                state.judgements[key] = P.Slot(P.FAILED, slot.attempts + 1)
            else:
                state.judgements[key] = P.Slot(P.DONE, slot.attempts + 1, rng.choice([P.LEFT, P.RIGHT, "tie"]))
        for key, slot in list(state.judgements.items()):
            if slot.state == P.LIVE and key not in step.start_judgements:
                state.judgements[key] = P.Slot(P.DONE, slot.attempts, P.LEFT)
        for pair, outcome in step.record:
            state.verdicts[pair] = outcome
    else:
        raise AssertionError("never finished")
    assert step.done == step.total
    assert len(recorded) == len(set(recorded)) == len(state.verdicts)  # each (pair, prompt) decided once
    assert all(slot.attempts <= P.MAX_ATTEMPTS for slot in state.judgements.values())
    assert all(slot.state != P.LIVE for slot in state.judgements.values())
    if fmt == P.ADAPTIVE:
        assert step.stopped in P.STOP_REASONS and step.calls <= limit
    else:
        rounds = P.swiss_schedule(state)
        assert len(rounds) == adaptive.swiss_rounds(n) and all(r.complete for r in rounds)
        for r in rounds:  # nobody twice in a round; the bye plays nobody
            seated = [c for pair in r.pairs for c in pair]
            assert len(seated) == len(set(seated)) == n - (r.bye is not None) and r.bye not in seated


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 9), st.integers(1, 4), st.sampled_from(P.FORMATS), st.integers(1, 4),
       st.randoms(use_true_random=False))
def test_the_plan_from_the_stored_state_equals_the_plan_of_the_run_so_far(n, prompts, fmt, window, rng):
    """Resumable: at every step, the plan of the state read back (rows in any order) is the plan of
    the run that never stopped, so a run picked up after a restart goes on exactly as it would have."""
    state = P.RunState(prompts=list(range(1, prompts + 1)), contestants=list(range(n)), format=fmt, seed=5)
    for _ in range(5_000):
        step = P.plan(state, window)
        assert P.plan(stored(state, rng), window) == step
        if step.finished:
            return
        for key in step.start_answers:
            state.answers[key] = P.Slot(P.DONE, state.answer(key).attempts + 1)
        for key in step.start_judgements:
            state.judgements[key] = P.Slot(P.DONE, 1, rng.choice([P.LEFT, P.RIGHT, "tie"]))
        for pair, outcome in step.record:
            state.verdicts[pair] = outcome
    raise AssertionError("never finished")


@settings(max_examples=25, deadline=None)
@given(st.integers(8, 13), st.integers(1, 12), st.integers(0, 1000), st.randoms(use_true_random=False))
def test_swiss_never_seats_a_contestant_twice_in_a_round(n, prompts, seed, rng):
    state = P.RunState(prompts=list(range(1, prompts + 1)), contestants=list(range(n)), format=P.SWISS, seed=seed)
    drive(state, verdict=lambda key: rng.choice([P.LEFT, P.RIGHT, "tie"]))
    met: set = set()
    byes = []
    for r in P.swiss_schedule(state):
        seated = [c for pair in r.pairs for c in pair]
        assert len(seated) == len(set(seated)) == n - n % 2
        assert (r.bye is None) == (n % 2 == 0)
        byes.append(r.bye)
        if n % 2 == 0:  # with an even number, a rematch is always avoidable (see adaptive.swiss_pairing)
            assert not met & {frozenset(p) for p in r.pairs}
        met |= {frozenset(p) for p in r.pairs}
    assert n % 2 == 0 or len(set(byes)) == len(byes)  # nobody sits out twice
