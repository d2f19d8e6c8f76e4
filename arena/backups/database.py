"""Backing the database up while the app runs, and restoring it (`arena_backup PATH`,
`arena_restore PATH`; docs/operations.md).

- SQLite (the default): SQLite's online backup API copies the live file in one step, inside
  one read transaction, so the copy is the database as of one instant even while the web,
  Celery and orchestrator processes write (WAL: readers and writers do not block each other).
  The copy is written beside PATH and renamed onto it only once `PRAGMA integrity_check` says
  "ok", so a failed backup never leaves half a file; it is a single self-contained file
  (rollback journal, not WAL). A restore copies it back into the live file with the same API
  (one write transaction: other connections see the old database or the restored one, never
  a mix) after checking it is an intact SQLite database of this app.
- PostgreSQL: `pg_dump --format=custom` (one consistent snapshot; its password goes through
  PGPASSWORD, never on the command line), restored with `pg_restore --clean --if-exists
  --single-transaction`. The counts printed are read in the very snapshot the dump is taken
  from (`pg_export_snapshot`, `pg_dump --snapshot`).

Either way the app should be stopped for a restore: work it had in flight would otherwise be
written over (and a running task could write into rows the restore took away).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from django.db import connections

SQLITE_MAGIC = b"SQLite format 3\x00"
PG_DUMP_MAGIC = b"PGDMP"


class BackupError(Exception):
    """Something the operator can fix: the message says what."""


@dataclass
class Summary:
    path: Path
    engine: str  # "sqlite" or "postgresql"
    size_bytes: int
    counts: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        counts = ", ".join(f"{n} {what}" for what, n in self.counts.items())
        return f"{self.path} ({self.engine}, {self.size_bytes / 2**20:.1f} MiB): {counts}"


def _tables() -> dict[str, str]:
    from arena.battles.models import Battle
    from arena.generations.models import Generation

    return {"battles": Battle._meta.db_table, "generations": Generation._meta.db_table}


def count_queries() -> dict[str, str]:
    """What a summary counts: battles, verdicts (battles with an outcome) and generations."""
    t = _tables()
    return {"battles": f"SELECT COUNT(*) FROM {t['battles']}",
            "verdicts": f"SELECT COUNT(*) FROM {t['battles']} WHERE outcome <> ''",
            "generations": f"SELECT COUNT(*) FROM {t['generations']}"}


def _counts(cursor) -> dict[str, int]:
    out = {}
    for what, sql in count_queries().items():
        cursor.execute(sql)
        out[what] = int(cursor.fetchone()[0])
    return out


def engine(using: str = "default") -> str:
    vendor = connections[using].vendor
    if vendor not in ("sqlite", "postgresql"):
        raise BackupError(f"Backups support SQLite and PostgreSQL, not {vendor}.")
    return vendor


def backup(path: str | os.PathLike, using: str = "default") -> Summary:
    """A consistent copy of the database `using` at PATH (replaced if it exists)."""
    target = Path(path).expanduser().resolve()
    _check_writable(target)
    if engine(using) == "sqlite":
        return _sqlite_backup(target, using)
    return _pg_backup(target, using)


def restore(path: str | os.PathLike, using: str = "default") -> Summary:
    """Replace the database `using` with the backup at PATH."""
    source = Path(path).expanduser().resolve()
    if check_restore_file(source, using) == "sqlite":
        return _sqlite_restore(source, using)
    return _pg_restore(source, using)


def check_restore_file(path: str | os.PathLike, using: str = "default") -> str:
    """The kind of backup at PATH ("sqlite" or "postgresql") if it fits the database `using`;
    BackupError saying why not otherwise (checked before anyone is asked to confirm)."""
    source = Path(path).expanduser().resolve()
    if not source.is_file():
        raise BackupError(f"No backup file at {source}.")
    with source.open("rb") as f:
        head = f.read(len(SQLITE_MAGIC))
    kind = "sqlite" if head.startswith(SQLITE_MAGIC) else "postgresql" if head.startswith(PG_DUMP_MAGIC) else None
    wanted = engine(using)
    if kind is None:
        raise BackupError(f"{source} is not a backup made by arena_backup (neither an SQLite database "
                          "nor a pg_dump custom-format archive).")
    if kind != wanted:
        raise BackupError(f"{source} is a {'SQLite' if kind == 'sqlite' else 'PostgreSQL (pg_dump)'} backup, "
                          f"but this app's database is {'SQLite' if wanted == 'sqlite' else 'PostgreSQL'}: "
                          "restore it where DATABASE_URL names the same kind of database.")
    return kind


def _check_writable(target: Path) -> None:
    if target.is_dir():
        raise BackupError(f"{target} is a directory: give the backup file's path.")
    parent = target.parent
    if not parent.is_dir():
        raise BackupError(f"Cannot write the backup: the directory {parent} does not exist.")
    if not os.access(parent, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise BackupError(f"Cannot write the backup: {target} is not writable by this user.")


@contextlib.contextmanager
def _temporary_beside(target: Path):
    """A new empty file in PATH's directory, removed unless the caller renamed it onto PATH."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
    finally:
        tmp.unlink(missing_ok=True)


# --- SQLite ------------------------------------------------------------------------------
def _sqlite_name(using: str) -> str:
    name = str(connections[using].settings_dict["NAME"])
    if name == ":memory:" or name.startswith("file:") or not Path(name).is_file():
        raise BackupError(f"The SQLite database {name} is not a file on disk.")
    return name


def _sqlite_connect(name: str | Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(name), timeout=30, isolation_level=None)
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


def _sqlite_check(conn: sqlite3.Connection, what: Path) -> dict[str, int]:
    """An intact database of this app (integrity_check ok, the app's tables there): its counts."""
    try:
        result = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        if result != ["ok"]:
            raise BackupError(f"{what} failed SQLite's integrity check: {'; '.join(map(str, result[:5]))}")
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = sorted(set(_tables().values()) - tables)
        if missing:
            raise BackupError(f"{what} is an SQLite database, but not this app's (no table {', '.join(missing)}).")
        return _counts(conn.cursor())
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"{what} is not a readable SQLite database: {exc}") from exc


def _sqlite_backup(target: Path, using: str) -> Summary:
    live = _sqlite_name(using)
    with _temporary_beside(target) as tmp:
        src, dst = _sqlite_connect(live), _sqlite_connect(tmp)
        try:
            src.backup(dst)  # every page in one step: one read transaction, one instant
            dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
            counts = _sqlite_check(dst, target)
        except sqlite3.Error as exc:
            raise BackupError(f"The SQLite backup failed: {exc}") from exc
        finally:
            src.close()
            dst.close()
        os.replace(tmp, target)
    return Summary(target, "sqlite", target.stat().st_size, counts)


def _sqlite_restore(source: Path, using: str) -> Summary:
    live = _sqlite_name(using)
    src = _sqlite_connect(source)
    try:
        _sqlite_check(src, source)
        connections[using].close()  # this process's own connection reopens on the restored data
        dst = _sqlite_connect(live)
        try:
            src.backup(dst)
            counts = _sqlite_check(dst, Path(live))
        finally:
            dst.close()
    except sqlite3.Error as exc:
        raise BackupError(f"The SQLite restore failed: {exc}") from exc
    finally:
        src.close()
    return Summary(source, "sqlite", source.stat().st_size, counts)


# --- PostgreSQL ----------------------------------------------------------------------------
def _pg_tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise BackupError(f"{name} is not installed (or not on PATH): install the PostgreSQL client tools "
                          "(Debian/Ubuntu: apt install postgresql-client), of the server's major version or newer.")
    return found


def _pg_settings(using: str) -> tuple[list[str], dict[str, str], dict]:
    """Connection arguments for the client tools, their environment (the password) and psycopg's kwargs."""
    s = connections[using].settings_dict
    args, kwargs = [], {"dbname": s["NAME"]}
    for flag, key in (("--host", "HOST"), ("--port", "PORT"), ("--username", "USER")):
        if s.get(key):
            args.append(f"{flag}={s[key]}")
            kwargs[{"HOST": "host", "PORT": "port", "USER": "user"}[key]] = s[key]
    env = {**os.environ}
    if s.get("PASSWORD"):
        env["PGPASSWORD"] = s["PASSWORD"]
        kwargs["password"] = s["PASSWORD"]
    return [*args, f"--dbname={s['NAME']}"], env, kwargs


def _run(cmd: list[str], env: dict[str, str], what: str) -> None:
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip()[-2000:]
        raise BackupError(f"{what} failed (exit {result.returncode}): {detail}")


def _pg_backup(target: Path, using: str) -> Summary:
    import psycopg

    pg_dump = _pg_tool("pg_dump")
    args, env, kwargs = _pg_settings(using)
    try:
        conn = psycopg.connect(autocommit=True, connect_timeout=10, **kwargs)
    except psycopg.Error as exc:
        raise BackupError(f"Cannot connect to PostgreSQL: {exc}") from exc
    with _temporary_beside(target) as tmp, conn:
        # The counts and the dump read one snapshot: this transaction exports it and stays open
        # while pg_dump reads it.
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        row = conn.execute("SELECT pg_export_snapshot()").fetchone()
        assert row is not None
        counts = _counts(conn.cursor())
        _run([pg_dump, "--format=custom", "--no-owner", f"--snapshot={row[0]}", f"--file={tmp}", *args],
             env, "pg_dump")
        conn.execute("ROLLBACK")
        os.replace(tmp, target)
    return Summary(target, "postgresql", target.stat().st_size, counts)


def _pg_restore(source: Path, using: str) -> Summary:
    pg_restore = _pg_tool("pg_restore")
    args, env, _kwargs = _pg_settings(using)
    _run([pg_restore, "--list", str(source)], env, f"Reading {source} as a pg_dump archive")
    connections[using].close()  # pg_restore --clean drops the tables: no transaction of ours may hold them
    _run([pg_restore, "--clean", "--if-exists", "--no-owner", "--single-transaction", "--exit-on-error",
          *args, str(source)], env, "pg_restore")
    with connections[using].cursor() as cursor:
        counts = _counts(cursor)
    return Summary(source, "postgresql", source.stat().st_size, counts)
