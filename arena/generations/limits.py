"""Per-user limits on starting work.

`check_start(user, cost)` is called by the service that creates generations
(arena.generations.services.start: one per generation, so a battle costs two), inside the
transaction that creates them, so every page, API and tournament path that starts work goes
through it (a suite run checks the rate once when it starts; its generations keep to its
window). It raises `LimitExceeded`, which says which limit, the numbers and when to retry;
views and APIs turn it into a 429 (`Retry-After`, the limit named).

Two limits, off when set to 0; staff are exempt from both (they operate the service: they
load and unload models, and run the benchmarks):
- concurrent generations (`ARENA_MAX_CONCURRENT_PER_USER`): counted from the database's
  live generations, not a counter, so a crashed process can never leak a slot. A comparison
  or tournament match is two generations and costs 2. The owner's user row is locked (on
  PostgreSQL; SQLite's IMMEDIATE transactions already serialise writers), so two requests at
  once cannot both take the last slot. A generation still "live" long after every timeout
  (its task died) stops counting after `stale_after_s()`. A lone request is never refused
  by it: with nothing running, a comparison runs even if the limit is 1.
- requests that start work (`ARENA_RATE_LIMIT_PER_MIN` per `ARENA_RATE_LIMIT_WINDOW_S`): a
  sliding window kept in a Redis sorted set (one member per accepted request, scored by
  Redis's own clock), checked and recorded by one Lua script, so racing requests cannot both
  take the last place, and `retry_after_s` is exactly when the oldest request leaves the
  window. Refused requests are not recorded (they start nothing); an accepted one stays
  recorded even if its transaction then fails (rare, and it errs on the safe side). If Redis does not answer,
  the rate limit lets the request through (logged): it protects the service, it must not be
  what takes it down; the concurrency limit still holds.
"""

from __future__ import annotations

import functools
import logging
import math
import uuid
from datetime import timedelta

import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from arena.api.http import Refusal
from arena.conversations import ConversationTooLong

log = logging.getLogger(__name__)

REQUESTS_PER_MINUTE = "requests_per_minute"
CONCURRENT_GENERATIONS = "concurrent_generations"
# What a refusal for too many running generations suggests as Retry-After: the real time
# is when one of them ends, which nobody knows; a short wait is a fair first try.
CONCURRENCY_RETRY_S = 5


class LimitExceeded(Refusal):
    """A per-user limit refused a request: `limit` names it, `allowed` and `current` are the
    numbers, `retry_after_s` how long to wait. The JSON API answers it with a 429 (a Refusal)."""

    status = 429
    code = "limit_exceeded"

    def __init__(self, limit: str, *, allowed: int, current: int, retry_after_s: int, message: str):
        super().__init__(message)
        self.limit, self.allowed, self.current = limit, allowed, current
        self.retry_after_s = max(1, int(retry_after_s))
        self.message = message

    def as_json(self) -> dict:
        """The API's error body: {"error": {"code", "message", "limit", "allowed", "current", "retry_after_s"}}."""
        return {"error": {"code": self.code, "message": self.message, "limit": self.limit, "allowed": self.allowed,
                          "current": self.current, "retry_after_s": self.retry_after_s}}

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_s)}


class PageRefusal:
    """Where pages turn a refusal to start work into words (the JSON API's one place is
    arena.api.http.answer_refusals, the OpenAI-compatible API's its `openai_endpoint`).

        refusal = PageRefusal(form, anew="comparison")
        with refusal:
            return redirect(start(...))
        return refusal.page(render(...))

    A per-user limit or a conversation past its length leaves the `with` block with its sentence
    added to `form` (when given; `message` otherwise); `page` gives the re-shown page its status:
    429 with Retry-After, or 400 (a conversation too long also says to start a new `anew`)."""

    def __init__(self, form=None, *, anew: str = "comparison"):
        self.form, self.anew = form, anew
        self.exc: LimitExceeded | ConversationTooLong | None = None

    def __enter__(self) -> PageRefusal:
        return self

    def __exit__(self, kind, exc, traceback) -> bool:
        if not isinstance(exc, LimitExceeded | ConversationTooLong):
            return False
        self.exc = exc
        if self.form is not None:
            self.form.add_error(None, self.message)
        return True

    @property
    def message(self) -> str:
        if isinstance(self.exc, ConversationTooLong):
            return f"{self.exc.message} Start a new {self.anew} to go on."
        return self.exc.message if self.exc else ""

    def page(self, response):
        """`response` with the refusal's status and headers; unchanged when nothing was refused."""
        if self.exc is not None:
            response.status_code = self.exc.status
            for name, value in self.exc.headers().items():
                response[name] = value
        return response


def check_start(user, cost: int = 1) -> None:
    """Refuse (raise LimitExceeded) or record a request that starts `cost` generations.

    Call it inside the transaction that creates them, before creating them."""
    if user.is_staff:
        return
    _check_concurrency(user, cost)
    _check_rate(user)


# --- concurrent generations -----------------------------------------------------------
def stale_after_s() -> float:
    """After this long a generation cannot still be running (the task's own load wait and
    generation timeout have both passed): a live status that old is a leftover."""
    return settings.ARENA_LOAD_TIMEOUT_S + settings.ARENA_GENERATION_TIMEOUT_S + 60


def live_generations(user) -> int:
    from arena.generations.models import Generation  # limits is imported by the apps' services

    since = timezone.now() - timedelta(seconds=stale_after_s())
    # A suite run's generations keep to the run's own window (ARENA_SUITE_IN_FLIGHT): a long run
    # must not take the owner's every slot for the playground.
    return Generation.objects.filter(owner=user, status__in=Generation.live_statuses(), created_at__gte=since).exclude(
        origin=Generation.Origin.SUITE).count()


def _check_concurrency(user, cost: int) -> None:
    allowed = settings.ARENA_MAX_CONCURRENT_PER_USER
    if not allowed:
        return
    # Serialise this user's starts until the transaction ends (a no-op on SQLite, whose
    # IMMEDIATE transactions hold the write lock already).
    list(get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk"))
    live = live_generations(user)
    if live and live + cost > allowed:
        needs = f"; this needs {cost} at once" if cost > 1 else ""
        noun = "generation" if live == 1 else "generations"
        raise LimitExceeded(
            CONCURRENT_GENERATIONS, allowed=allowed, current=live, retry_after_s=CONCURRENCY_RETRY_S,
            message=f"You have {live} {noun} running (the limit is {allowed}{needs}): "
                    f"wait for one to finish, or stop one.")


# --- requests per minute --------------------------------------------------------------
# KEYS[1]: the user's window. ARGV: limit, window in ms, a unique member.
# Returns {accepted (1/0), requests in the window, ms until the oldest one leaves it}.
_RATE_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, count + 1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, count, tonumber(oldest[2]) + window - now}
"""


@functools.lru_cache(maxsize=4)
def _rate_script(client):
    """The script registered on this client (EVALSHA, loaded again after a Redis restart)."""
    return client.register_script(_RATE_SCRIPT)


def rate_key(user) -> str:
    from arena import streams

    return streams.keys().rate_limit(user.pk)


def _check_rate(user) -> None:
    from arena import streams

    allowed = settings.ARENA_RATE_LIMIT_PER_MIN
    if not allowed:
        return
    window_s = settings.ARENA_RATE_LIMIT_WINDOW_S
    script = _rate_script(streams.client())
    try:
        accepted, count, retry_ms = script(keys=[rate_key(user)],
                                           args=[allowed, int(window_s * 1000), uuid.uuid4().hex])
    except redis.RedisError:  # see the module docstring
        log.warning("Rate limit not checked for user %s: Redis did not answer", user.pk, exc_info=True)
        return
    if not accepted:
        retry_s = max(1, math.ceil(int(retry_ms) / 1000))
        window = "minute" if window_s == 60 else f"{window_s:g} s"
        noun = "request" if count == 1 else "requests"
        raise LimitExceeded(
            REQUESTS_PER_MINUTE, allowed=allowed, current=int(count), retry_after_s=retry_s,
            message=f"{count} {noun} in the last {window} (the limit is {allowed}): try again in {retry_s} s.")
