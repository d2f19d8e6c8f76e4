from django.apps import AppConfig


class RatersConfig(AppConfig):
    name = "arena.raters"
    default_auto_field = "django.db.models.BigAutoField"
