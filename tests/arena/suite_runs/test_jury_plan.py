"""The suite run planner with a jury (arena.suite_runs.plan, pure): every format ends, each pair is
decided once from all its judges' readings by their majority, and an adaptive run keeps every
judge's calls within its budget; driven with random verdicts, failures and readings left live."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from arena.battles.judging import judge_verdict, jury_verdict
from arena.suite_runs import plan as P


def test_reading_names_round_trip_and_one_judge_keeps_todays_names():
    assert P.readings(1) == list(P.ORDERS)
    assert P.readings(3) == ["left_first", "right_first", "left_first/2", "right_first/2",
                             "left_first/3", "right_first/3"]
    assert all(P.reading(*P.split_reading(name)) == name for name in P.readings(3))
    assert P.default_budget(4, 2, judges=3) == 3 * P.default_budget(4, 2)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5), st.integers(1, 3), st.sampled_from([P.ROUND_ROBIN, P.KNOCKOUT, P.ADAPTIVE]),
       st.integers(1, 3), st.integers(1, 12), st.integers(6, 60), st.floats(0, 0.3),
       st.randoms(use_true_random=False))
def test_a_jury_decides_each_pair_once_from_every_judges_readings(n, prompts, fmt, judges, window, budget,
                                                                   judge_fails, rng):
    state = P.RunState(prompts=list(range(1, prompts + 1)), contestants=list(range(n)), format=fmt,
                       judges=judges, seed=rng.randrange(100), budget=budget if fmt == P.ADAPTIVE else None)
    recorded: dict = {}
    for _ in range(5_000):
        step = P.plan(state, window)
        if fmt == P.ADAPTIVE:
            assert step.calls <= P.budget_of(state)
        if step.finished:
            break
        for key in step.start_answers:
            state.answers[key] = P.Slot(P.DONE, state.answer(key).attempts + 1)
        assert all(P.split_reading(key[3])[1] <= judges for key in step.start_judgements)
        for key, slot in list(state.judgements.items()):  # what was live ends now
            if slot.state == P.LIVE:
                state.judgements[key] = P.Slot(P.DONE, slot.attempts, rng.choice([P.LEFT, P.RIGHT, "tie"]))
        for key in step.start_judgements:
            slot, roll = state.judgement(key), rng.random()
            if roll < 0.2:
                state.judgements[key] = P.Slot(P.LIVE, slot.attempts + 1)
            elif roll < 0.2 + judge_fails:
                state.judgements[key] = P.Slot(P.FAILED, slot.attempts + 1)
            else:
                state.judgements[key] = P.Slot(P.DONE, slot.attempts + 1, rng.choice([P.LEFT, P.RIGHT, "tie"]))
        for pair, outcome in step.record:
            assert pair not in recorded
            recorded[pair] = outcome
            state.verdicts[pair] = outcome
    else:
        raise AssertionError("never finished")
    assert step.done == step.total
    for pair, outcome in recorded.items():
        slots = {P.split_reading(key[3]): slot for key, slot in state.judgements.items() if key[:3] == pair}
        # Every reading, done or failed (for good; or, adaptive, given up with no call left for a retry).
        assert len(slots) == 2 * judges and all(slot.state in (P.DONE, P.FAILED) for slot in slots.values())
        verdicts = [judge_verdict(*(slots[(order, j)].verdict if slots[(order, j)].state == P.DONE else ""
                                    for order in P.ORDERS)) for j in range(1, judges + 1)]
        assert outcome == jury_verdict(verdicts)
