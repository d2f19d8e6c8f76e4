from django.apps import AppConfig


class GenerationsConfig(AppConfig):
    name = "arena.generations"
    # The Generation model and its migrations moved here from arena.playground. The label
    # stays "playground" so existing databases keep their table (playground_generation), their
    # migration history (app "playground"), their content types and the other apps' foreign
    # keys to "playground.generation"; a new label would need state-only migrations in three apps.
    label = "playground"
    verbose_name = "Generations"

    def ready(self) -> None:
        from arena import scheduler

        from . import admission, runs, tasks
        from .sweeper import SWEEP_EVERY_S, Sweeper

        tasks.register_run_kinds()
        runs.serve_line_with(admission.admit_waiting)
        # The orchestrator's loop serves the line of generations waiting for a free slot, and ends
        # generations whose Celery task has gone (one Sweeper: it remembers watch keys seen missing).
        scheduler.register("admit the line", every_s=admission.ADMIT_EVERY_S, run=admission.admit_waiting)
        scheduler.register("sweep generations", every_s=SWEEP_EVERY_S, run=Sweeper().sweep)
