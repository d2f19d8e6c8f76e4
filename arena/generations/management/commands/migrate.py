"""Django's `migrate`, after moving the generations app's history off its old label.

Until 2026-11 this app was labelled "playground": a database made then records its migrations
(django_migrations) and its model's content type (django_content_type) under that name. Django
keys both by label and checks the recorded history before any migration or pre_migrate handler
runs (battles' 0001, applied, would depend on ("generations", "0002_..."), unrecorded: an
InconsistentMigrationHistory), so no migration can rename them; this command does, then migrates.
Every path that migrates comes here: `manage.py migrate`, the launcher's start, the test database's
creation, and so a backup restored from before the rename (its first migrate relabels it).

Only the rows written under the old label are moved (named below), so the label "playground",
now the playground page's, can own migrations of its own one day. Renaming the content type,
rather than letting Django create a new one, keeps the permissions and admin log entries that
point at it. Both renames are no-ops once done.
"""

from django.contrib.contenttypes.models import ContentType
from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import connections, transaction
from django.db.migrations.recorder import MigrationRecorder

OLD_LABEL, LABEL = "playground", "generations"
MIGRATED_UNDER_OLD_LABEL = (
    "0001_initial", "0002_generation_history", "0003_generation_tag", "0004_generation_output_valid",
    "0005_alter_generation_origin", "0006_generation_admitted_at", "0007_generation_queue_wait",
    "0008_generation_run", "0009_fill_generation_run",
)


def relabel(using: str) -> None:
    connection = connections[using]
    tables = connection.introspection.table_names()
    with transaction.atomic(using=using):
        if MigrationRecorder.Migration._meta.db_table in tables:
            history = MigrationRecorder(connection).migration_qs
            recorded = history.filter(app=LABEL).values_list("name", flat=True)
            history.filter(app=OLD_LABEL, name__in=set(MIGRATED_UNDER_OLD_LABEL) - set(recorded)).update(app=LABEL)
        if ContentType._meta.db_table in tables:
            types = ContentType.objects.db_manager(using)
            if not types.filter(app_label=LABEL, model="generation").exists():
                types.filter(app_label=OLD_LABEL, model="generation").update(app_label=LABEL)
            types.clear_cache()


class Command(DjangoMigrate):
    def handle(self, *args, **options):
        relabel(options["database"])
        super().handle(*args, **options)
