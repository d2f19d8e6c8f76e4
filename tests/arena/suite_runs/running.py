"""Running a suite run to its end on a real database without workers: each step of the runner,
then every generation it started ended as its run would end it (tests/arena/factories.finish)."""

from __future__ import annotations

import json

from arena.generations.models import Generation
from arena.suite_runs import runner
from arena.suite_runs.models import SuiteJudgement, SuiteRun
from tests.arena.factories import finish


def live(run: SuiteRun) -> list[Generation]:
    return list(Generation.objects.filter(origin=Generation.Origin.SUITE, status__in=Generation.live_statuses())
                .order_by("created_at"))


def end_all(run: SuiteRun, *, answer: str = "Paris", verdict: str = "A", fail=lambda gen: False) -> int:
    """End every live generation of the run; how many."""
    gens = live(run)
    judge_ids = set(SuiteJudgement.objects.filter(run=run).values_list("generation_id", flat=True))
    for gen in gens:
        if fail(gen):
            finish(gen, "", status=Generation.Status.FAILED)
        else:
            finish(gen, f'{{"verdict": "{verdict}"}}' if gen.id in judge_ids else f"{answer} ({gen.model.slug})")
    return len(gens)


def run_to_end(run: SuiteRun, **kwargs) -> int:
    steps = 0
    while run.live:
        runner.step(run)
        end_all(run, **kwargs)
        steps += 1
        assert steps < 200
    return steps


# How a judge answers, given the order it was shown the pair in: the letter it picks.
PREFERS_LEFT = {"left_first": "A", "right_first": "B"}  # the left answer, wherever it is shown
PREFERS_RIGHT = {"left_first": "B", "right_first": "A"}
FIRST_SHOWN = {"left_first": "A", "right_first": "A"}  # a position, not an answer: its orders disagree


def run_with_judges(run: SuiteRun, behaviour: dict, fail=frozenset()) -> None:
    """Run to the end; judge `slug` answers as behaviour[slug] (with a reason naming its pick);
    every reading of a judge in `fail` fails (each of its attempts)."""
    for _ in range(200):
        if not run.live:
            return
        runner.step(run)
        rows = {row.generation_id: row for row in SuiteJudgement.objects.filter(run=run).select_related("judge")}
        for gen in live(run):
            row = rows.get(gen.id)
            if row is None:
                finish(gen, f"Answer of {gen.model.slug}.")
            elif row.judge.slug in fail:
                finish(gen, "", status=Generation.Status.FAILED)
            else:
                letter = behaviour[row.judge.slug][row.order]
                finish(gen, json.dumps({"verdict": letter, "reason": f"{letter} is   clearer\nand shorter."}))
        run.refresh_from_db()
    raise AssertionError("the run never ended")
