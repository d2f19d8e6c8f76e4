"""Running a suite run to its end on a real database without workers: each step of the runner,
then every generation it started ended as its run would end it (tests/arena/factories.finish)."""

from __future__ import annotations

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
