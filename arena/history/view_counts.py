"""How many times each share link was opened: counted in Redis, added to the database in batches.

A public share link can be opened by anyone, as often as they like: counting each view with a
database write would let any holder of a link load the database (and, on SQLite, take its one
write lock). A view is one Redis pipeline instead (HINCRBY of the link's count, HSET of when);
a periodic job of the orchestrator's loop (`flush`, registered from HistoryConfig.ready() with
arena/scheduler.py) adds what has gathered to `ShareLink.views` / `last_viewed_at` every
ARENA_SHARE_VIEWS_FLUSH_S (10 s) in one transaction, so the owner's count lags the views by at
most that (plus a tick). Should Redis not answer, a view is counted in the database as before.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

import redis
from django.conf import settings
from django.db import models, transaction

from arena import streams

log = logging.getLogger(__name__)


def flush_every_s() -> float:
    return settings.ARENA_SHARE_VIEWS_FLUSH_S


def note(link) -> None:
    """One view of `link`: no database write."""
    key = streams.keys().share_views()
    try:
        with streams.client().pipeline(transaction=False) as pipe:
            pipe.hincrby(key, str(link.id), 1)
            pipe.hset(key, f"{link.id}:at", repr(time.time()))
            pipe.execute()
    except redis.RedisError as exc:
        log.warning("Share link views go to the database while Redis does not answer: %s", exc)
        link.note_view()


def pending() -> dict[int, tuple[int, float]]:
    """Views counted but not yet in the database: link id -> (views, last viewed, epoch seconds)."""
    return _parse(streams.client().hgetall(streams.keys().share_views()))


def _parse(raw: dict) -> dict[int, tuple[int, float]]:
    fields = {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
              for k, v in raw.items()}
    counts: dict[int, tuple[int, float]] = {}
    for name, value in fields.items():
        if ":" in name:
            continue
        counts[int(name)] = (int(value), float(fields.get(f"{name}:at", time.time())))
    return counts


def flush() -> int:
    """Adds the views gathered in Redis to the database (taken and cleared atomically, so two
    flushers never count a view twice); how many links were updated."""
    from .models import ShareLink

    client, key = streams.client(), streams.keys().share_views()
    with client.pipeline(transaction=True) as pipe:
        pipe.hgetall(key)
        pipe.delete(key)
        raw, _deleted = pipe.execute()
    counts = _parse(raw)
    try:
        with transaction.atomic():
            for link_id, (views, at) in counts.items():
                ShareLink.objects.filter(id=link_id).update(
                    views=models.F("views") + views, last_viewed_at=datetime.fromtimestamp(at, tz=UTC))
    except Exception:
        with client.pipeline(transaction=False) as pipe:  # put them back for the next flush
            for link_id, (views, at) in counts.items():
                pipe.hincrby(key, str(link_id), views)
                pipe.hsetnx(key, f"{link_id}:at", repr(at))
            pipe.execute()
        raise
    return len(counts)
