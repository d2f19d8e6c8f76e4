"""The leaderboard's computed results, cached per filter until a new verdict lands.

A page computes 201 Bradley–Terry fits (the ratings and their bootstrap), style control's as
many, the agreement and the win matrix from every counted battle. None of it depends on who
asks, and it only changes when a verdict does: so it is kept in Django's cache (per server
process) under a key naming the filter and the *verdict generation*, a counter in Redis that
every process reads and that is bumped whenever a battle with a verdict is saved or deleted
(a vote, a judge's or a suite's verdict, a self-identification flag) or a reveal changes which battles
count (tournaments and suite runs reveal by a bulk update: they call `bump()`). A bumped
counter makes every process's older entries unreachable; they age out (`ARENA_LEADERBOARD_CACHE_S`,
also the longest a result could be stale should Redis be unreachable when a verdict lands).

The counter starts at the clock's nanoseconds when missing, so a Redis restart (which empties
it) never brings back a number an older entry was stored under.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import redis
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from arena import streams
from arena.battles.models import Battle
from arena.categories.models import Assignment, Category

log = logging.getLogger(__name__)


def timeout_s() -> float:
    return settings.ARENA_LEADERBOARD_CACHE_S


def generation() -> str | None:
    """The current verdict generation; None when Redis cannot be read (then nothing is cached)."""
    client, key = streams.client(), streams.keys().verdict_generation()
    try:
        value = client.get(key)
        if value is None:
            client.set(key, time.time_ns(), nx=True)
            value = client.get(key)
    except redis.RedisError as exc:
        log.warning("Leaderboard cache off for this request: %s", exc)
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def bump() -> None:
    """A verdict landed or changed: every process's cached results are out of date."""
    client, key = streams.client(), streams.keys().verdict_generation()
    try:
        with client.pipeline() as pipe:
            pipe.set(key, time.time_ns(), nx=True)
            pipe.incr(key)
            pipe.execute()
    except redis.RedisError as exc:
        log.warning("Could not mark the leaderboard out of date (cached pages may lag up to %.0f s): %s",
                    timeout_s(), exc)


def bump_now_and_on_commit() -> None:
    """Bumped at once and again once the transaction commits: a page computed between the two
    (from the data before the commit) is never kept under the new generation."""
    bump()
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(bump)


def cached(name: str, filters: tuple, compute: Callable[[], Any]) -> Any:
    """`compute()`'s result for this filter and verdict generation, computed once per process."""
    gen = generation()
    if gen is None or timeout_s() <= 0:
        return compute()
    key = "leaderboard:" + ":".join([name, gen, *(str(f) for f in filters)])
    found = cache.get(key)
    if found is None:
        found = compute()
        cache.set(key, found, timeout_s())
    return found


@receiver(post_save, sender=Battle, dispatch_uid="leaderboard-cache-battle-saved")
@receiver(post_delete, sender=Battle, dispatch_uid="leaderboard-cache-battle-deleted")
def _battle_changed(sender, instance, **kwargs) -> None:
    if instance.outcome:  # a battle without a verdict counts nowhere (a new match, a comparison under way)
        bump_now_and_on_commit()


@receiver(post_save, sender=Assignment, dispatch_uid="leaderboard-cache-category-assigned")
@receiver(post_delete, sender=Assignment, dispatch_uid="leaderboard-cache-category-unassigned")
@receiver(post_delete, sender=Category, dispatch_uid="leaderboard-cache-category-deleted")
def _category_changed(sender, instance, **kwargs) -> None:
    """A prompt's category set or changed (a rule, the classifier, its owner): the table by kind
    of prompt is computed again."""
    bump_now_and_on_commit()
