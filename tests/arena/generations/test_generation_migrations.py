"""The Generation model moved from arena.playground to arena.generations under the same app
label, so databases migrated before the move need nothing: same table, same history."""

from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from arena.generations.models import Generation


def test_the_models_and_the_migrations_agree(db):  # makemigrations reads the applied history
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)  # SystemExit(1) on a missing migration


def test_generation_keeps_its_label_table_and_migration_history(db):
    assert apps.get_app_config("playground").name == "arena.generations"
    assert Generation._meta.db_table == "playground_generation"
    assert "playground_generation" in connection.introspection.table_names()
    applied = {name for app, name in MigrationRecorder(connection).applied_migrations() if app == "playground"}
    assert {"0001_initial", "0002_generation_history", "0003_generation_tag"} <= applied  # the history kept
