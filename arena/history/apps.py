from django.apps import AppConfig


class HistoryConfig(AppConfig):
    name = "arena.history"
    default_auto_field = "django.db.models.BigAutoField"
