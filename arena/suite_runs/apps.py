from django.apps import AppConfig


class SuiteRunsConfig(AppConfig):
    name = "arena.suite_runs"
    label = "suite_runs"
    verbose_name = "Suite runs"
    default_auto_field = "django.db.models.BigAutoField"
