"""The Django side's handles on Redis: one client per process, and the `Keys` (inference/protocol.py,
where every key name is defined) under our prefix."""

import logging
import time
from functools import lru_cache

import redis
import redis.asyncio as aioredis
from django.conf import settings
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from inference.protocol import STREAM_TTL_S, Keys

log = logging.getLogger(__name__)

# Longer than any blocking read we make (XREAD BLOCK), or redis-py's default 5 s
# socket timeout would cut those reads off.
SOCKET_TIMEOUT_S = 30
# A Redis restart is ridden out inside each command (reconnect, then the command again):
# 0.05 s doubling to 1 s between tries, about 17 s in all, as the inference workers do.
# A blocking read cut off by the restart is simply read again from the last entry seen.
RETRIES = 20
RETRY_ON = [redis.ConnectionError, redis.TimeoutError]


def _backoff() -> ExponentialBackoff:
    return ExponentialBackoff(cap=1.0, base=0.05)


def keys() -> Keys:
    """Built on each call (it only holds the prefix), so a changed setting applies at once."""
    return Keys(settings.ARENA_REDIS_PREFIX)


@lru_cache(maxsize=1)
def client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, health_check_interval=30, socket_timeout=SOCKET_TIMEOUT_S,
                                retry=Retry(_backoff(), RETRIES), retry_on_error=RETRY_ON)


def async_client() -> aioredis.Redis:
    """A new asyncio client (one per consumer: asyncio clients are bound to a loop)."""
    return aioredis.Redis.from_url(settings.REDIS_URL, socket_timeout=SOCKET_TIMEOUT_S, health_check_interval=30,
                                   retry=AsyncRetry(_backoff(), RETRIES), retry_on_error=RETRY_ON)


# --- watch (Keys.watch): a generation whose follower (the Celery task) is gone is ended by the sweeper ---
def watch_ttl_s() -> float:
    return settings.ARENA_WATCH_TTL_S


# --- viewers: a web generation nobody watches any more is cancelled ------------------
async def viewer_joined(redis_client: aioredis.Redis, generation_id: str) -> None:
    key = keys().viewers(generation_id)
    await redis_client.hincrby(key, "count", 1)
    await redis_client.hdel(key, "left_at")
    await redis_client.expire(key, STREAM_TTL_S)


async def viewer_left(redis_client: aioredis.Redis, generation_id: str) -> None:
    key = keys().viewers(generation_id)
    try:
        if await redis_client.hincrby(key, "count", -1) <= 0:
            await redis_client.hset(key, "left_at", repr(time.time()))
    except Exception:  # Redis gone: the generation's own timeout still ends it
        log.warning("Could not record that a viewer left generation %s", generation_id)
