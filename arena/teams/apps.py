from django.apps import AppConfig


class TeamsConfig(AppConfig):
    name = "arena.teams"
    default_auto_field = "django.db.models.BigAutoField"
