"""A small simulation of a suite run for the pure planner (arena.suite_runs.plan): every
generation a plan starts ends at once, as the test says."""

from __future__ import annotations

from arena.suite_runs import plan as P


def finish(state: P.RunState, step: P.Plan, *, fail=lambda key: False, verdict=lambda key: P.LEFT) -> None:
    """What the runner does with a plan, every started generation ending at once."""
    for key in step.start_answers:
        old = state.answer(key)
        state.answers[key] = P.Slot(P.FAILED if fail(key) else P.DONE, old.attempts + 1)
    for key in step.start_judgements:
        old = state.judgement(key)
        state.judgements[key] = P.Slot(P.FAILED if fail(key) else P.DONE, old.attempts + 1,
                                       "" if fail(key) else verdict(key))
    for pair, outcome in step.record:
        state.verdicts[pair] = outcome


def drive(state: P.RunState, in_flight: int = 4, **kwargs) -> tuple[list[P.Plan], list]:
    plans, started = [], []
    for _ in range(10_000):
        step = P.plan(state, in_flight)
        plans.append(step)
        if step.finished:
            return plans, started
        started.extend(step.start_answers + step.start_judgements)
        finish(state, step, **kwargs)
    raise AssertionError("the run never finished")
