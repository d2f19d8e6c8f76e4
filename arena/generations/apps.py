from django.apps import AppConfig


class GenerationsConfig(AppConfig):
    name = "arena.generations"  # label "generations"; "playground" until 2026-11 (management/commands/migrate.py)
    verbose_name = "Generations"

    def ready(self) -> None:
        from arena import scheduler

        from . import admission, tasks
        from .sweeper import SWEEP_EVERY_S, Sweeper

        tasks.register_run_kinds()
        # The orchestrator's loop serves the line of generations waiting for a free slot, and ends
        # generations whose Celery task has gone (one Sweeper: it remembers watch keys seen missing).
        scheduler.register("admit the line", every_s=admission.ADMIT_EVERY_S, run=admission.admit_waiting)
        scheduler.register("sweep generations", every_s=SWEEP_EVERY_S, run=Sweeper().sweep)
