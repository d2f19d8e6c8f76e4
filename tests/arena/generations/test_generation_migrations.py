"""The generations app was labelled "playground" until 2026-11. A database made before keeps every
row through its first migrate after: its history and its content type move to the new label
(arena/generations/management/commands/migrate.py), no table is renamed, nothing is created twice.
Runs on SQLite and, with DATABASE_URL, on PostgreSQL."""

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import connection
from django.db.migrations.exceptions import InconsistentMigrationHistory
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from arena.generations.management.commands.migrate import MIGRATED_UNDER_OLD_LABEL
from arena.generations.models import Generation

OLD, NEW = "playground", "generations"
# The table Django writes itself (its rows are compared label for label below).
HISTORY = MigrationRecorder.Migration._meta.db_table
# A share link names exactly one target (a check constraint): its generation.
NULLABLE_TARGETS = {("history", "sharelink"): "generation"}
VALUES = {"JSONField": dict, "BooleanField": lambda: False, "DateTimeField": timezone.now,
          "FloatField": lambda: 1.0, "PositiveIntegerField": lambda: 1, "PositiveSmallIntegerField": lambda: 1}


def _in_dependency_order(models: list) -> list:
    """Each model after those its required (or NULLABLE_TARGETS) foreign keys point at."""
    ordered: list = []
    while len(ordered) < len(models):
        ready = [m for m in models if m not in ordered and all(t in ordered for t in _targets(m))]
        assert ready, f"foreign keys in a cycle: {set(models) - set(ordered)}"
        ordered += ready
    return ordered


def _targets(model) -> list:
    named = NULLABLE_TARGETS.get((model._meta.app_label, model._meta.model_name))
    return [f.related_model for f in model._meta.concrete_fields
            if f.is_relation and (not f.null or f.name == named)]


def _value(field, model, made: dict):
    if field.is_relation:
        return made[field.related_model] if field.related_model in _targets(model) else None
    if field.has_default():
        return field.get_default()
    if field.null:
        return None
    if field.choices:
        return field.choices[0][0]
    return VALUES.get(field.get_internal_type(), lambda: "x")()


def _fill_every_table() -> None:
    """A row in every table that has none, as raw rows (no save(), no signals), each foreign key
    pointing at a row made (or found) before; and a user granted a permission on generations."""
    made: dict = {}
    for model in _in_dependency_order(apps.get_models(include_auto_created=True)):
        made[model] = model._base_manager.first()
        if made[model] is None:
            fields = [f for f in model._meta.concrete_fields if not f.auto_created]  # an auto id is the database's
            row = model(**{f.name: _value(f, model, made) for f in fields})
            made[model] = model._base_manager.bulk_create([row])[0]
    made[User].user_permissions.add(Permission.objects.get(codename="view_generation"))


def _rows(table: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
        return sorted(map(repr, cursor.fetchall()))


def _labels() -> tuple[set, set]:
    history = set(MigrationRecorder(connection).migration_qs.values_list("app", "name"))
    types = set(ContentType.objects.values_list("id", "app_label", "model"))
    return history, types


def _as_before_the_rename() -> None:
    """The history and content types as a database made before the rename holds them."""
    # Only what existed then: a migration added since was never recorded under the old label.
    MigrationRecorder(connection).migration_qs.filter(app=NEW, name__in=MIGRATED_UNDER_OLD_LABEL).update(app=OLD)
    ContentType.objects.filter(app_label=NEW).update(app_label=OLD)
    ContentType.objects.clear_cache()


def _renamed(labels: tuple[set, set]) -> tuple[set, set]:
    history, types = labels
    return ({(NEW if app == OLD else app, name) for app, name in history},
            {(id_, NEW if app == OLD else app, model) for id_, app, model in types})


class OldDatabase:
    """A database as made before the rename, with a row in every table: its rows and labels."""

    def __init__(self):
        _fill_every_table()
        _as_before_the_rename()
        self.tables = [t for t in connection.introspection.table_names() if t != HISTORY]
        self.rows = self.snapshot()
        self.labels = _labels()

    def snapshot(self) -> dict[str, list[str]]:
        return {table: _rows(table) for table in self.tables}

    def assert_migrated(self) -> None:
        assert _labels() == _renamed(self.labels)  # same ids, no content type made twice, no row left behind
        after = self.snapshot()
        assert [t for t in self.tables if after[t] != self.rows[t]] == [ContentType._meta.db_table]  # the label
        assert User.objects.get().has_perm("generations.view_generation")  # the permission followed
        assert "generations_generation" not in connection.introspection.table_names()
        call_command("migrate", "--check", verbosity=0)  # SystemExit(1) on an unapplied migration
        call_command("makemigrations", "--check", "--dry-run", verbosity=0)  # SystemExit(1) on a missing one


@pytest.fixture
def old_database(transactional_db):
    try:
        yield OldDatabase()
    finally:  # the next test's database has the history under the new label, whatever happened here
        call_command("migrate", verbosity=0)


def test_a_database_made_under_the_old_label_migrates_with_every_row(old_database):
    assert [t for t, rows in old_database.rows.items() if not rows] == []  # a row in every table
    history = old_database.labels[0]
    # Every migration from before the rename under the old label (one added since is under the new).
    assert {name for app, name in history if app == OLD} == set(MIGRATED_UNDER_OLD_LABEL)
    assert not {name for app, name in history if app == NEW} & set(MIGRATED_UNDER_OLD_LABEL)
    with pytest.raises(InconsistentMigrationHistory):  # why Django's own migrate cannot do it
        call_command(DjangoMigrate(), verbosity=0)
    call_command("migrate", verbosity=0)
    old_database.assert_migrated()


def test_a_backup_made_under_the_old_label_restores_then_migrates(old_database, tmp_path):
    path = tmp_path / "before-the-rename.backup"
    call_command("arena_backup", str(path), verbosity=0)
    call_command("migrate", verbosity=0)  # the database moves on; then it is restored
    Generation.objects.all().delete()
    call_command("arena_restore", str(path), interactive=False, verbosity=0)
    assert _labels() == old_database.labels and old_database.snapshot() == old_database.rows  # as it was
    call_command("migrate", verbosity=0)
    old_database.assert_migrated()


@pytest.mark.django_db
def test_the_app_is_labelled_generations_and_keeps_its_table():
    assert apps.get_app_config("generations").name == "arena.generations"
    assert apps.get_app_config("playground").name == "arena.playground"
    assert Generation._meta.db_table == "playground_generation"
    applied = {name for app, name in MigrationRecorder(connection).applied_migrations() if app == NEW}
    assert {"0001_initial", "0009_fill_generation_run"} <= applied

