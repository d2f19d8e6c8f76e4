from django.apps import AppConfig


class BackupsConfig(AppConfig):
    """Backing the database up while the app runs, and restoring it: `arena_backup`, `arena_restore`."""

    name = "arena.backups"
    label = "backups"
    verbose_name = "Backups"
