from django.core.management.base import BaseCommand, CommandError

from arena.backups import database as backups


class Command(BaseCommand):
    help = ("Copy the database to PATH while the app runs: SQLite's online backup (one consistent instant, "
            "integrity-checked), or pg_dump --format=custom for PostgreSQL. Restore with arena_restore PATH.")

    def add_arguments(self, parser):
        parser.add_argument("path", help="The backup file to write (replaced if it exists).")
        parser.add_argument("--database", default="default", help="The DATABASES entry (default: default).")

    def handle(self, path, database="default", **options):
        try:
            summary = backups.backup(path, using=database)
        except backups.BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Backed up to {summary.describe()}")
