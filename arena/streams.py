"""The Django side's handles on Redis: one client per process, keys under our prefix."""

from functools import lru_cache

import redis
import redis.asyncio as aioredis
from django.conf import settings

from inference.protocol import Keys

# Longer than any blocking read we make (XREAD BLOCK), or redis-py's default 5 s
# socket timeout would cut those reads off.
SOCKET_TIMEOUT_S = 30


@lru_cache(maxsize=1)
def keys() -> Keys:
    return Keys(settings.ARENA_REDIS_PREFIX)


@lru_cache(maxsize=1)
def client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, health_check_interval=30, socket_timeout=SOCKET_TIMEOUT_S)


def async_client() -> aioredis.Redis:
    """A new asyncio client (one per consumer: asyncio clients are bound to a loop)."""
    return aioredis.Redis.from_url(settings.REDIS_URL, socket_timeout=SOCKET_TIMEOUT_S)
