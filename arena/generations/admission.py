"""Admission: generations start in fair order, within the installation's capacity.

Every path that starts work (the playground, comparisons, tournaments, the APIs, suite runs)
creates its generations queued through `services.start`, which submits them (`submit()`)
inside the same transaction. Nothing is sent to Celery yet: once the rows are committed, a pass
of the line (`admit_waiting`) starts the runs that fit in ARENA_MAX_CONCURRENT_GENERATIONS, in the
fair order of `fairness.py` (round robin between users; staff take their turn like everyone), and
tells every run still waiting its place in line (a QUEUED event on each of its streams, which pages show as
"3rd in line"). Waiting holds no Celery thread: a run's task is sent only once it is
admitted, so the Celery pool only ever holds admitted runs.

The database is the whole state, as for the per-user limits (arena/generations/limits.py): a generation
waits while it is queued with no `admitted_at`; the generations in use are the live ones
admitted within `limits.stale_after_s()`, so a crashed process never leaks a slot. A pass
runs under a Redis lock (one pass at a time across every process, so two cannot both fill
the last slot) and is cheap; it runs when work is submitted, when a run ends (its slots
are free), and once a second from the orchestrator's loop (a periodic job: arena/scheduler.py), which catches
what the others missed (Redis down for a moment, a process killed between the two).

A pass also ends waiting runs that will never start: the user stopped them (their cancel key),
every viewer of a web one left (`lifecycle.abandoned`, as for running ones), or one
waited past ARENA_QUEUE_TIMEOUT_S. Once admitted, a run is the sweeper's (sweeper.py) if its
Celery message is lost.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from datetime import timedelta

import redis
from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Count, Max
from django.utils import timezone

from arena import streams
from inference import protocol as p

from . import fairness, lifecycle, limits, runs
from .lifecycle import HALF_A_BATTLE, NEVER_STARTED
from .models import Generation

log = logging.getLogger(__name__)
ADMIT_EVERY_S = 1.0  # the period of the scheduler's pass (registered in GenerationsConfig.ready())
LOCK_TTL_S = 10.0  # a pass killed holding the lock blocks the others this long at most
LOCK_WAIT_S = 5.0  # a pass waits this long for the one under way, then leaves it to the next
SERVED_MEMORY_S = 3600.0  # a user last served longer ago than this counts as never served
PLACE_REFRESH_S = 10.0  # an unchanged place in line is said again this often (the page's clock)


@dataclass
class Unit:
    """A run waiting to start: one generation, or the generations of a grouped run (a battle's two
    sides start together: arena/generations/runs.py)."""

    kind: runs.RunKind
    ident: str  # the run id of a grouped run, else the generation's id
    rows: list[dict]  # {id, owner_id, origin, created_at} per waiting generation
    size: int = 1  # its generations: a battle whose other side has already ended has one row of two

    @property
    def key(self) -> str:
        return f"{self.kind.name}:{self.ident}"

    @property
    def ids(self) -> list[str]:
        return [str(row["id"]) for row in self.rows]

    def waiting(self) -> fairness.Waiting:
        since = min(row["created_at"] for row in self.rows).timestamp()
        return fairness.Waiting(self.key, self.rows[0]["owner_id"], len(self.rows), since)

    def enqueue(self) -> None:
        """Send its Celery task (the task's claim, queued -> loading, makes a second one harmless)."""
        self.kind.start(self.ident)


def submit() -> None:
    """Call inside the transaction that created queued generations: they join the line once it
    commits. Several starts in one transaction make one pass."""
    connection = transaction.get_connection()
    if connection.in_atomic_block and any(func is admit_waiting for _sids, func, _robust in connection.run_on_commit):
        return
    transaction.on_commit(admit_waiting)


def admit_waiting() -> int:
    """One pass of the line; the number of runs it started. Never raises: a pass that cannot
    run (Redis or the database gone for a moment) is left to the next one."""
    try:
        started = Line(streams.client(), streams.keys()).admit()
    except (redis.RedisError, DatabaseError):
        log.warning("The line of waiting generations was not served this time", exc_info=True)
        return 0
    for unit in started:  # after the lock: with Celery eager (some tests) the task runs right here
        try:
            unit.enqueue()
        except Exception:  # the broker gone: the sweeper sends it again (it is admitted, nobody follows it)
            log.warning("Could not send the task of %s; the sweeper will", unit.key, exc_info=True)
    return len(started)


def place(gen: Generation) -> dict | None:
    """Where a generation waiting in line stands, as its stream last said ({"position": 1 for
    next, "waiting"}); None once it has left the line (or before its first pass)."""
    if gen.status != Generation.Status.QUEUED or gen.admitted_at is not None:
        return None
    try:
        entries = streams.client().xrevrange(streams.keys().stream(str(gen.id)), count=1)
    except redis.RedisError:
        return None
    fields = entries[0][1] if entries else None
    said = p.parse_event(fields) if fields is not None else {}
    return {"position": said["position"], "waiting": said["waiting"]} if said.get("type") == p.QUEUED else None


class Line:
    """One pass: read who waits and what runs, end the runs that will never start, admit those
    that fit in fair order, and tell the rest their place."""

    def __init__(self, client: redis.Redis, keys: p.Keys):
        self.redis, self.keys = client, keys
        self.now = timezone.now()

    def admit(self) -> list[Unit]:
        lock = self.redis.lock(self.keys.admission_lock(), timeout=LOCK_TTL_S, blocking_timeout=LOCK_WAIT_S)
        if not lock.acquire():
            return []  # another pass held it all along: the next one serves whatever this one would have
        self.now = timezone.now()  # after the wait: admissions are stamped in the order they happen
        try:
            units = self.drop_ended(self.waiting_units())
            order = fairness.line([u.waiting() for u in units], self.last_served(units))
            chosen = fairness.take(order, self.in_use(), settings.ARENA_MAX_CONCURRENT_GENERATIONS)
            by_key = {u.key: u for u in units}
            started = self.mark_admitted([by_key[w.key] for w in chosen])
            self.tell_places([by_key[w.key] for w in order[len(chosen):]])
            return started
        finally:
            with contextlib.suppress(redis.exceptions.LockError):  # it lapsed: a very slow pass
                lock.release()

    # --- reading ----------------------------------------------------------------------
    def waiting_units(self) -> list[Unit]:
        rows = Generation.objects.filter(status=Generation.Status.QUEUED, admitted_at__isnull=True).values(
            "id", "owner_id", "origin", "created_at", "run_kind", "run_id")
        groups: dict[tuple[str, str], list[dict]] = {}
        singles = []
        for row in rows:
            kind = runs.get(row["run_kind"])
            if kind.grouped and row["run_id"] is not None:
                groups.setdefault((kind.name, str(row["run_id"])), []).append(row)
            else:
                singles.append(Unit(kind, str(row["id"]), [row]))
        sizes = self.run_sizes(groups)
        grouped = [Unit(runs.get(name), run_id, group, size=sizes[(name, run_id)])
                   for (name, run_id), group in groups.items()]
        return grouped + singles

    @staticmethod
    def run_sizes(groups: dict[tuple[str, str], list[dict]]) -> dict[tuple[str, str], int]:
        """How many generations each grouped run has, ended ones included."""
        if not groups:
            return {}
        counted = (Generation.objects.filter(run_kind__in={name for name, _ in groups},
                                             run_id__in={run_id for _, run_id in groups})
                   .order_by().values("run_kind", "run_id").annotate(n=Count("id")))
        return {(row["run_kind"], str(row["run_id"])): row["n"] for row in counted}

    def in_use(self) -> int:
        since = self.now - timedelta(seconds=limits.stale_after_s())
        return Generation.objects.filter(status__in=Generation.live_statuses(), admitted_at__gte=since).count()

    def last_served(self, units: list[Unit]) -> dict[int, float]:
        users = {u.rows[0]["owner_id"] for u in units}
        recent = Generation.objects.filter(owner_id__in=users,
                                           admitted_at__gte=self.now - timedelta(seconds=SERVED_MEMORY_S))
        return {row["owner_id"]: row["last"].timestamp()
                for row in recent.values("owner_id").annotate(last=Max("admitted_at"))}

    # --- runs that will never start ---------------------------------------------------
    def drop_ended(self, units: list[Unit]) -> list[Unit]:
        """End the units stopped, abandoned, timed out or left half a battle; the rest still wait."""
        pipe = self.redis.pipeline(transaction=False)
        for unit in units:
            for gen_id in unit.ids:
                pipe.exists(self.keys.cancel(gen_id))
                pipe.hmget(self.keys.viewers(gen_id), ["left_at", "count"])
        replies = iter(pipe.execute())
        still = []
        for unit in units:
            seen = [(next(replies), next(replies)) for _ in unit.ids]
            reason = self.why_ended(unit, seen)
            if reason is None:
                still.append(unit)
            else:
                self.end(unit, reason)
        return still

    def why_ended(self, unit: Unit, seen: list[tuple[int, list]]) -> str | None:
        """"cancelled", a failure reason for the user, or None while it should go on waiting."""
        if any(cancelled for cancelled, _viewers in seen):
            return "cancelled"
        web = unit.rows[0]["origin"] == Generation.Origin.WEB
        if web and all(lifecycle.abandoned(viewers) for _cancelled, viewers in seen):
            return "cancelled"
        if len(unit.rows) < unit.size:
            return HALF_A_BATTLE
        if (self.now.timestamp() - unit.waiting().since) > settings.ARENA_QUEUE_TIMEOUT_S:
            return NEVER_STARTED
        return None

    def end(self, unit: Unit, reason: str) -> None:
        for gen in Generation.objects.select_related("model").filter(id__in=unit.ids):
            if reason == "cancelled":
                lifecycle.cancel(gen, self.redis)
            else:
                lifecycle.fail(gen, p.TIMEOUT if reason == NEVER_STARTED else p.ENGINE_ERROR, reason, self.redis)
            runs.ended_elsewhere(gen)

    # --- admitting and telling --------------------------------------------------------
    def mark_admitted(self, units: list[Unit]) -> list[Unit]:
        started = []
        with transaction.atomic():
            for unit in units:
                updated = Generation.objects.filter(id__in=unit.ids, status=Generation.Status.QUEUED,
                                                    admitted_at__isnull=True).update(admitted_at=self.now)
                if updated:
                    started.append(unit)
        return started

    def tell_places(self, units: list[Unit]) -> None:
        """A QUEUED event on each waiting stream whose place changed (or was said long ago)."""
        pipe = self.redis.pipeline(transaction=False)
        for unit in units:
            for gen_id in unit.ids:
                pipe.xrevrange(self.keys.stream(gen_id), count=1)
        last = iter(pipe.execute())
        now = time.time()
        for position, unit in enumerate(units, start=1):
            elapsed = round(now - unit.waiting().since, 1)
            for gen_id in unit.ids:
                entries = next(last)
                said = p.parse_event(entries[0][1]) if entries else {}
                if said.get("type") == p.QUEUED and said.get("position") == position and (
                        now - said["t"] < PLACE_REFRESH_S):
                    continue
                pipe.xadd(self.keys.stream(gen_id), p.event(p.QUEUED, position=position, waiting=len(units),
                                                            elapsed_s=elapsed))
                pipe.expire(self.keys.stream(gen_id), p.STREAM_TTL_S)
        pipe.execute()
