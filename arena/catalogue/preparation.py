"""Preparing catalogue entries ahead of their first use: AWQ quantisation at `make run`'s start.

On a fresh machine an awq entry has no quantised cache yet, and its first worker would
quantise for minutes while a user's tournament waits on "Loading the model". So the
launcher starts `manage.py prepare_models` in the background: niced, one entry at a
time, it quantises every enabled awq entry whose cache is missing and publishes how
far it is in Redis (`Keys.preparation(slug)`), where the status page, the catalogue
admin and the creation pages read it. A worker started meanwhile for the same entry
waits for that quantisation and passes its progress on (inference/awq.py's entry
lock) instead of quantising a second time.

A preparation's key lives TTL_S and its preparer renews it every HEARTBEAT_S, so a
preparer that dies stops being shown within TTL_S (the entry is then quantised by its
first worker, as without a preparer).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import redis

from inference.protocol import Keys

log = logging.getLogger(__name__)

QUEUED, PREPARING, FAILED = "queued", "preparing", "failed"
HEARTBEAT_S = 5.0
TTL_S = 20  # a preparer silent this long (killed, or its machine gone) is not preparing any more
FAILED_TTL_S = 3600  # a failure stays on the status page for an hour; the entry's first worker tries again


@dataclass(frozen=True)
class Preparation:
    """One entry's preparation, as read back from Redis."""

    slug: str
    state: str
    line: str = ""
    done: int = 0
    total: int = 0
    eta_s: float | None = None  # as of `updated_at`
    updated_at: float = 0.0
    error: str = ""

    @property
    def active(self) -> bool:
        return self.state in (QUEUED, PREPARING)

    @property
    def percent(self) -> int:
        return 100 * self.done // self.total if self.total else 0

    def minutes_left(self, now: float | None = None) -> int | None:
        """Whole minutes still to go (at least 1 while preparing), None before a first estimate."""
        if self.eta_s is None:
            return None
        left = self.eta_s - ((now if now is not None else time.time()) - self.updated_at)
        return max(1, math.ceil(left / 60))

    def summary(self) -> str:
        """For people: "preparing: 40%, about 3 min left", "queued", "failed: <reason>"."""
        if self.state == FAILED:
            return f"preparation failed: {self.error}"
        if self.state == QUEUED:
            return "queued for preparation"
        minutes = self.minutes_left()
        left = f", about {minutes} min left" if minutes is not None else ""
        return f"preparing: {self.percent}%{left}"

    @classmethod
    def from_hash(cls, slug: str, fields: dict) -> Preparation:
        eta = fields.get("eta_s", "")
        return cls(slug=slug, state=fields.get("state", ""), line=fields.get("line", ""),
                   done=int(fields.get("done") or 0), total=int(fields.get("total") or 0),
                   eta_s=float(eta) if eta else None, updated_at=float(fields.get("updated_at") or 0),
                   error=fields.get("error", ""))


def read(client: redis.Redis, keys: Keys, slugs: Iterable[str]) -> dict[str, Preparation]:
    """The preparations published for `slugs` (those with none are absent: prepared, or never needed)."""
    slugs = list(slugs)
    pipe = client.pipeline(transaction=False)
    for slug in slugs:
        pipe.hgetall(keys.preparation(slug))
    found = {}
    for slug, fields in zip(slugs, pipe.execute(), strict=True):
        if fields:
            found[slug] = Preparation.from_hash(slug, {_text(k): _text(v) for k, v in fields.items()})
    return found


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


class Publisher:
    """Writes one entry's preparation to Redis as its quantisation reports progress."""

    def __init__(self, client: redis.Redis, keys: Keys, slug: str, clock: Callable[[], float] = time.time):
        self.client, self.key, self.clock = client, keys.preparation(slug), clock
        self.started_at: float | None = None  # when the first progress line came
        self.settled = False  # finished or failed: the heartbeat leaves the key (and its TTL) alone

    def queued(self) -> None:
        self._write({"state": QUEUED})

    def progress(self, line: str) -> None:
        now = self.clock()
        self.started_at = self.started_at or now
        fields = {"state": PREPARING, "line": line}
        layers = _awq().layer_progress(line)
        if layers:
            done, total = layers
            # Layers take about equally long; the first one also carries the model's load.
            fields.update(done=done, total=total, eta_s=round((now - self.started_at) / done * (total - done), 1))
        self._write(fields)

    def failed(self, error: str) -> None:
        self.settled = True
        self._write({"state": FAILED, "error": error[:500]}, ttl=FAILED_TTL_S)

    def finished(self) -> None:
        self.settled = True
        self.client.delete(self.key)

    def renew(self) -> None:
        """The heartbeat: keeps a live preparer's queued or running entry from expiring."""
        if not self.settled:
            self.client.expire(self.key, TTL_S)

    def _write(self, fields: dict, ttl: int = TTL_S) -> None:
        pipe = self.client.pipeline()
        pipe.hset(self.key, mapping={**fields, "updated_at": repr(self.clock())})
        pipe.expire(self.key, ttl)
        pipe.execute()


def _awq():
    """inference.awq, imported where a preparation runs: it loads torch and transformers, which
    the web processes that import this module for its reads never need (tests/test_boundaries.py)."""
    from inference import awq

    return awq


def specs_to_prepare(entries: Iterable) -> list:
    """The enabled awq entries among `entries` (catalogue ModelEntry objects)."""
    return [e for e in entries if e.enabled and e.kind == "awq"]


def prepare_all(client: redis.Redis, keys: Keys, entries: Iterable, *,
                needs: Callable | None = None, prepare: Callable | None = None) -> dict[str, str]:
    """Quantise the awq entries among `entries` whose cache is missing, one at a time, publishing
    each one's progress. Returns slug -> "prepared" | "ready" (nothing to do) | "failed: <reason>"."""
    needs = needs or _awq().needs_quantising
    prepare = prepare or _awq().prepare
    todo, outcome = [], {}
    for entry in specs_to_prepare(entries):
        publisher = Publisher(client, keys, entry.slug)
        try:
            needed = needs(entry.spec())
        except Exception as exc:  # no GPTQModel, a source gone: published, and the next entry goes on
            outcome[entry.slug] = _failed(entry, publisher, exc)
            continue
        if needed:
            todo.append((entry, publisher))
        else:
            outcome[entry.slug] = "ready"
    for _entry, publisher in todo:
        publisher.queued()
    with _heartbeat([publisher for _entry, publisher in todo]):
        for entry, publisher in todo:
            outcome[entry.slug] = _prepare_one(entry, publisher, prepare)
    return outcome


def _prepare_one(entry, publisher: Publisher, prepare: Callable) -> str:
    log.info("Preparing %s (AWQ quantisation)", entry.slug)
    try:
        prepare(entry.spec(), publisher.progress)
    except Exception as exc:  # a failure is published, and the next entry goes on
        return _failed(entry, publisher, exc)
    publisher.finished()
    return "prepared"


def _failed(entry, publisher: Publisher, exc: Exception) -> str:
    log.exception("Preparing %s failed", entry.slug)
    publisher.failed(f"{type(exc).__name__}: {exc}")
    return f"failed: {exc}"


class _heartbeat:
    """A daemon thread renewing the given publishers' keys every HEARTBEAT_S while the block runs."""

    def __init__(self, publishers: list[Publisher]):
        self.publishers = publishers
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="preparation-heartbeat", daemon=True)

    def __enter__(self) -> None:
        self.thread.start()

    def __exit__(self, *exc_info) -> None:
        self.stop.set()
        self.thread.join()

    def _run(self) -> None:
        while not self.stop.wait(HEARTBEAT_S):
            for publisher in self.publishers:
                try:
                    publisher.renew()
                except redis.RedisError as exc:  # a Redis restart: the next beat renews again
                    log.warning("Preparation heartbeat failed: %s", exc)


# --- the Django side's reads (pages, admin) ------------------------------------------------
def published(entries: Iterable) -> dict[str, Preparation]:
    """The preparations published for the awq entries among `entries`; {} while Redis does not
    answer (a page must not fail because a progress display cannot be read)."""
    from arena import streams

    slugs = [e.slug for e in entries if e.kind == "awq"]
    if not slugs:
        return {}
    try:
        return read(streams.client(), streams.keys(), slugs)
    except redis.RedisError as exc:
        log.warning("Could not read model preparations: %s", exc)
        return {}


def being_prepared(entries: Iterable) -> list[tuple[object, Preparation]]:
    """(entry, preparation) for each of `entries` still queued or being prepared, in the given order."""
    entries = list(entries)
    found = published(entries)
    return [(e, found[e.slug]) for e in entries if e.slug in found and found[e.slug].active]
