from django.apps import AppConfig


class TournamentsConfig(AppConfig):
    name = "arena.tournaments"
    label = "tournaments"
    verbose_name = "Tournaments"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from arena.battles import secrecy

        from . import tasks  # noqa: F401  (connects the warming to the models' signals)
        from .secrecy import secret_contestants

        secrecy.register(secret_contestants)  # an unrevealed tournament's contestants are secret to its owner
