"""The suite run planner (arena.suite_runs.plan): pure, driven here by a small simulation of a run."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from arena.suite_runs import plan as P
from tests.arena.suite_runs.simulation import drive, finish


def test_round_robin_answers_then_judges_every_pair_in_both_orders():
    state = P.RunState(prompts=[1, 2], contestants=[10, 20, 30])
    plans, started = drive(state)
    answers = [k for k in started if len(k) == 2]
    judgements = [k for k in started if len(k) == 4]
    assert sorted(answers) == sorted(itertools.product([1, 2], [10, 20, 30]))
    assert len(judgements) == len(set(judgements)) == 2 * 3 * 2  # 3 pairs x 2 prompts x 2 orders
    assert set(state.verdicts) == {(p, a, b) for p in (1, 2) for a, b in [(10, 20), (10, 30), (20, 30)]}
    assert plans[-1].done == plans[-1].total == 6 + 12
    # No judgement starts while an answer is still missing.
    first_judging = next(i for i, s in enumerate(plans) if s.start_judgements)
    assert all(not s.start_answers for s in plans[first_judging:])


def test_answers_go_contestant_by_contestant_within_the_window():
    state = P.RunState(prompts=[1, 2, 3], contestants=[10, 20], judged=False)
    first = P.plan(state, in_flight=2)
    assert first.start_answers == [(1, 10), (2, 10)]
    state.answers[(1, 10)] = P.Slot(P.LIVE, 1)
    state.answers[(2, 10)] = P.Slot(P.LIVE, 1)
    assert P.plan(state, in_flight=2).start_answers == []  # the window is full


def test_a_failed_answer_is_retried_then_its_pairs_are_forfeited():
    state = P.RunState(prompts=[1], contestants=[10, 20, 30])
    plans, started = drive(state, fail=lambda key: key == (1, 20))
    assert started.count((1, 20)) == P.MAX_ATTEMPTS
    assert set(state.verdicts) == {(1, 10, 30)}
    assert plans[-1].done == plans[-1].total


def test_judge_disagreeing_with_itself_across_orders_gives_a_tie():
    state = P.RunState(prompts=[1], contestants=[10, 20])
    drive(state, verdict=lambda key: P.LEFT if key[3] == "left_first" else P.RIGHT)
    assert state.verdicts == {(1, 10, 20): "tie"}


def test_a_judgement_failing_for_good_makes_the_pair_a_tie():
    state = P.RunState(prompts=[1], contestants=[10, 20])
    drive(state, fail=lambda key: len(key) == 4 and key[3] == "right_first")
    assert state.verdicts == {(1, 10, 20): "tie"}


def test_knockout_plays_a_bracket_per_prompt_round_by_round():
    state = P.RunState(prompts=[1], contestants=[1, 2, 3, 4], format=P.KNOCKOUT)
    plans, _ = drive(state, verdict=lambda key: P.RIGHT)  # the right side always wins
    assert list(state.verdicts) == [(1, 1, 2), (1, 3, 4), (1, 2, 4)]
    assert plans[-1].done == plans[-1].total == 4 + 2 * 3
    # The final waits for both semi-finals.
    judged_at = [{k[:3] for k in s.start_judgements} for s in plans]
    final = next(i for i, pairs in enumerate(judged_at) if (1, 2, 4) in pairs)
    assert all(state.verdicts[(1, 1, 2)] and i < final for i, p in enumerate(judged_at) if (1, 3, 4) in p)


def test_knockout_forfeits_and_byes():
    state = P.RunState(prompts=[1], contestants=[1, 2, 3], format=P.KNOCKOUT)
    plans, _ = drive(state, fail=lambda key: key == (1, 1))
    assert list(state.verdicts) == [(1, 2, 3)]  # 1 forfeits to 2, 3 has a bye, then 2 meets 3
    assert plans[-1].done == plans[-1].total


def test_knockout_tie_goes_to_a_seeded_coin():
    pair = (1, 10, 20)
    winners = {P.knockout_winner(pair, "tie", seed) for seed in range(40)}
    assert winners == {10, 20}
    assert P.knockout_winner(pair, "tie", 7) == P.knockout_winner(pair, "tie", 7)


def test_without_a_judge_the_run_ends_with_its_answers():
    state = P.RunState(prompts=[1, 2], contestants=[1, 2], judged=False)
    plans, started = drive(state)
    assert len(started) == 4 and not state.verdicts
    assert plans[-1].total == 4


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(1, 4), st.sampled_from(P.FORMATS), st.integers(1, 5),
       st.sets(st.tuples(st.integers(1, 4), st.integers(0, 5))), st.randoms(use_true_random=False))
def test_every_run_finishes_never_repeats_work_and_never_exceeds_its_window(
        n, prompts, fmt, window, failing, rng):
    contestants = list(range(n))
    state = P.RunState(prompts=list(range(1, prompts + 1)), contestants=contestants, format=fmt, seed=3)
    live_max = 0
    for _ in range(10_000):
        step = P.plan(state, window)
        if step.finished:
            break
        started = step.start_answers + step.start_judgements
        assert len(set(started)) == len(started)
        assert all(state.answer(k).wants_start for k in step.start_answers)
        assert all(state.judgement(k).wants_start for k in step.start_judgements)
        assert not any(pair in state.verdicts for pair, _ in step.record)
        live_max = max(live_max, len(started) + P._live(state))
        # Some started generations stay live for a step, as real ones do.
        lingering = [k for k in started if rng.random() < 0.3]
        for key in lingering:
            target = state.answers if len(key) == 2 else state.judgements
            target[key] = P.Slot(P.LIVE, target.get(key, P.Slot()).attempts + 1)
        step.start_answers = [k for k in step.start_answers if k not in lingering]
        step.start_judgements = [k for k in step.start_judgements if k not in lingering]
        finish(state, step, fail=lambda key: key[:2] in failing and len(key) == 2,
               verdict=lambda key: rng.choice([P.LEFT, P.RIGHT]))
        for key in [k for k, s in {**state.answers, **state.judgements}.items() if s.state == P.LIVE]:
            target = state.answers if len(key) == 2 else state.judgements
            if key not in lingering:
                target[key] = P.Slot(P.DONE, target[key].attempts, "" if len(key) == 2 else P.LEFT)
    else:
        raise AssertionError("never finished")
    assert live_max <= window
    assert step.done == step.total
    assert all(slot.attempts <= P.MAX_ATTEMPTS for slot in {**state.answers, **state.judgements}.values())


def test_upcoming_names_the_next_contestant_then_the_judge():
    state = P.RunState(prompts=[1, 2], contestants=[10, 20])
    assert P.upcoming(state) is None  # nothing under way: the next request loads it anyway
    state.answers[(1, 10)] = state.answers[(2, 10)] = P.Slot(P.LIVE, 1)
    assert P.upcoming(state) == 20
    state.answers[(1, 20)] = state.answers[(2, 20)] = P.Slot(P.LIVE, 1)
    assert P.upcoming(state) == P.JUDGE
    state.judged = False
    assert P.upcoming(state) is None
