from django.apps import AppConfig


class SuiteRunsConfig(AppConfig):
    name = "arena.suite_runs"
    label = "suite_runs"
    verbose_name = "Suite runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from arena import scheduler

        from . import judge_checks
        from .runner import KICK_EVERY_S, kick, register_run_kinds

        register_run_kinds()
        judge_checks.register_run_kind()
        judge_checks.add_admin_action()
        scheduler.register("kick stalled suite runs", every_s=KICK_EVERY_S, run=kick)
