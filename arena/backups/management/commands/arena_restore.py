from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from arena.backups import database as backups

WARNING = ("This replaces the whole database ({name}) with the backup {path}. Stop the app first "
           "(make run, the Celery worker, the orchestrator): work it has in flight would be lost or "
           "written into rows the restore takes away.")


class Command(BaseCommand):
    help = "Replace the database with a backup made by arena_backup (stop the app first)."

    def add_arguments(self, parser):
        parser.add_argument("path", help="A file arena_backup wrote.")
        parser.add_argument("--database", default="default", help="The DATABASES entry (default: default).")
        parser.add_argument("--noinput", "--no-input", action="store_false", dest="interactive",
                            help="Do not ask for confirmation.")

    def handle(self, path, database="default", interactive=True, **options):
        try:
            backups.check_restore_file(path, using=database)
        except backups.BackupError as exc:
            raise CommandError(str(exc)) from exc
        name = connections[database].settings_dict["NAME"]
        self.stderr.write(WARNING.format(name=name, path=path))
        if interactive and input("Type 'yes' to restore: ").strip().lower() != "yes":
            raise CommandError("Restore cancelled: nothing was changed.")
        try:
            summary = backups.restore(path, using=database)
        except backups.BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Restored from {summary.describe()}")
