"""The Celery task that runs one generation: a `Run` with one side (arena/generations/run.py),
and the single-generation run kinds it starts (arena/generations/runs.py)."""

from __future__ import annotations

from celery import shared_task

from . import lifecycle, runs
from .models import Generation
from .run import Run


@shared_task(ignore_result=True, soft_time_limit=3600, time_limit=3700)
def run_generation(generation_id: str) -> None:
    gen = Generation.objects.select_related("model").filter(id=generation_id).first()
    if gen is None or not lifecycle.begin(gen):
        return  # gone, or another task already has it
    Run([gen], f"generation:{gen.id}").run()


def start_run(generation_id: str) -> None:
    """How a single-generation run kind starts (a suite run's kinds use it too)."""
    run_generation.delay(generation_id)


def register_run_kinds() -> None:
    """The single-generation run kinds; GenerationsConfig.ready() calls this."""
    for name in (runs.PLAYGROUND, runs.API, runs.OPENAI, runs.PROBE):
        runs.register(runs.RunKind(name, start=start_run))
