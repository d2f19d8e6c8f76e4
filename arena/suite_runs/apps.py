from django.apps import AppConfig


class SuiteRunsConfig(AppConfig):
    name = "arena.suite_runs"
    label = "suite_runs"
    verbose_name = "Suite runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from arena import scheduler

        from .runner import KICK_EVERY_S, kick, register_run_kinds

        register_run_kinds()
        scheduler.register("kick stalled suite runs", every_s=KICK_EVERY_S, run=kick)
