from django.apps import AppConfig


class HistoryConfig(AppConfig):
    name = "arena.history"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from arena import scheduler

        from . import view_counts

        # Share links' views counted in Redis, into the database.
        scheduler.register("share-link views", every_s=view_counts.flush_every_s, run=view_counts.flush)
