"""`arena_backup PATH` / `arena_restore PATH` (arena/backups/database.py): a backup taken while
battles and verdicts are being written, restored into an emptied database, holds every
battle and verdict that had finished before the backup started, and none begun after it
ended. Runs on the database the suite runs on: SQLite (the online backup API) here, and
PostgreSQL (pg_dump/pg_restore) in `make test`'s second pass. A thread stands in for the
app's other processes: it has its own connection."""

import threading
import time
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import close_old_connections, connection, transaction

from arena.backups import database as backups
from arena.battles.actions import vote
from arena.battles.models import Battle
from arena.generations.models import Generation

pytestmark = pytest.mark.django_db(transaction=True)


def finished_verdict(owner, left, right, i: int):
    """A battle with both answers stored and a verdict, in one transaction as the app would end it."""
    with transaction.atomic():
        gens = [Generation.objects.create(owner=owner, model=m, prompt=f"prompt {i}", params={},
                                          status=Generation.Status.RUNNING) for m in (left, right)]
        for gen in gens:
            assert gen.finish(Generation.Status.DONE, text=f"answer {i}", finish_reason="stop", metrics={})
        battle = Battle.objects.create(owner=owner, left=gens[0], right=gens[1])
        assert vote(battle, "left")
    return battle.id


class Writer(threading.Thread):
    """Writes finished battles with verdicts until stopped; `done` holds (id, began, committed)."""

    def __init__(self, owner, left, right):
        super().__init__(daemon=True)
        self.args = (owner, left, right)
        self.stop = threading.Event()
        self.done: list[tuple[object, float, float]] = []
        self.error: BaseException | None = None

    def run(self):
        try:
            i = 0
            while not self.stop.is_set():
                began = time.monotonic()
                battle_id = finished_verdict(*self.args, i)
                self.done.append((battle_id, began, time.monotonic()))
                i += 1
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            connection.close()

    def wait_for(self, n: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while len(self.done) < n and self.error is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert self.error is None and len(self.done) >= n, self.error


def test_a_backup_taken_mid_load_restores_every_finished_battle_and_verdict(owner, catalogue, tmp_path, capsys):
    path = tmp_path / "arena.backup"
    writer = Writer(owner, catalogue[0], catalogue[3])
    writer.start()
    try:
        writer.wait_for(20)
        started = time.monotonic()
        finished_before = {battle_id for battle_id, _began, committed in list(writer.done) if committed < started}
        call_command("arena_backup", str(path))
        ended = time.monotonic()
        during = len(writer.done)
        writer.wait_for(during + 10)  # the load goes on after the backup
    finally:
        writer.stop.set()
        writer.join(timeout=60)
    close_old_connections()
    assert writer.error is None, writer.error
    begun_after = {battle_id for battle_id, began, _committed in writer.done if began > ended}
    out = capsys.readouterr().out
    assert f"Backed up to {path}" in out and "battles" in out and "verdicts" in out and "generations" in out
    assert path.stat().st_size > 0 and not list(tmp_path.glob(".*partial"))

    # A fresh database: everything written is gone, then the backup comes back.
    Battle.objects.all().delete()
    Generation.objects.all().delete()
    call_command("arena_restore", str(path), interactive=False)
    assert "Restored from" in capsys.readouterr().out

    restored = {b.id: b for b in Battle.objects.select_related("left", "right")}
    assert finished_before <= set(restored), len(finished_before - set(restored))
    assert not begun_after & set(restored)
    for battle in restored.values():  # a consistent instant: no battle without its answers or verdict
        assert battle.outcome == "left" and battle.voted_at is not None
        assert battle.left.status == battle.right.status == Generation.Status.DONE and battle.left.text
    assert Generation.objects.count() == 2 * len(restored)


def test_clear_errors_for_a_bad_path_a_wrong_file_and_a_missing_pg_dump(tmp_path, monkeypatch):
    with pytest.raises(CommandError, match="does not exist"):
        call_command("arena_backup", str(tmp_path / "no-such-dir" / "b.backup"))
    with pytest.raises(CommandError, match="is a directory"):
        call_command("arena_backup", str(tmp_path))
    with pytest.raises(CommandError, match="No backup file"):
        call_command("arena_restore", str(tmp_path / "missing.backup"), interactive=False)
    junk = tmp_path / "junk.backup"
    junk.write_text("not a backup")
    with pytest.raises(CommandError, match="not a backup made by arena_backup"):
        call_command("arena_restore", str(junk), interactive=False)

    # A backup of the other kind of database is refused before anything is touched.
    other = tmp_path / "other.backup"
    if connection.vendor == "sqlite":
        other.write_bytes(backups.PG_DUMP_MAGIC + b"\x01\x0e\x00" + b"\x00" * 64)
        expected = "is a PostgreSQL \\(pg_dump\\) backup, but this app's database is SQLite"
    else:
        import sqlite3

        sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
        expected = "is a SQLite backup, but this app's database is PostgreSQL"
    with pytest.raises(CommandError, match=expected):
        call_command("arena_restore", str(other), interactive=False)

    monkeypatch.setattr(backups.shutil, "which", lambda _name: None)
    with pytest.raises(backups.BackupError, match="pg_dump is not installed"):
        backups._pg_tool("pg_dump")


def test_an_sqlite_file_of_another_app_is_refused(tmp_path):
    if connection.vendor != "sqlite":
        pytest.skip("the SQLite restore's own checks (PostgreSQL: pg_restore --list reads the archive)")
    import sqlite3

    other = Path(tmp_path / "other.sqlite3")
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(CommandError, match="not this app's"):
        call_command("arena_restore", str(other), interactive=False)


def test_the_restore_asks_first_and_a_no_changes_nothing(tmp_path, monkeypatch):
    path = tmp_path / "b.backup"
    call_command("arena_backup", str(path))
    monkeypatch.setattr("builtins.input", lambda _prompt: "no")
    with pytest.raises(CommandError, match="cancelled"):
        call_command("arena_restore", str(path))
