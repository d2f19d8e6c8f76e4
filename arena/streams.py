"""The Django side's handles on Redis: one client per process, keys under our prefix."""

from functools import lru_cache

import redis
import redis.asyncio as aioredis
from django.conf import settings

from inference.protocol import Keys


@lru_cache(maxsize=1)
def keys() -> Keys:
    return Keys(settings.ARENA_REDIS_PREFIX)


@lru_cache(maxsize=1)
def client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, health_check_interval=30)


def async_client() -> aioredis.Redis:
    """A new asyncio client (one per consumer: asyncio clients are bound to a loop)."""
    return aioredis.Redis.from_url(settings.REDIS_URL)
