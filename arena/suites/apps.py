from django.apps import AppConfig


class SuitesConfig(AppConfig):
    name = "arena.suites"
    label = "suites"
    verbose_name = "Prompt suites"
    default_auto_field = "django.db.models.BigAutoField"
