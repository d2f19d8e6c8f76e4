"""At most ARENA_MAX_SOCKETS_PER_USER live WebSockets per user, across every server process.

Each socket is a denial of service in waiting: it holds a file descriptor and a share of its
process's Redis pool, and a few thousand of them once took Redis from Celery, the orchestrator
and the workers. The app may run several web server processes (ARENA_ASGI_PROCESSES), so the count
lives in Redis: one sorted set per user (`Keys.socket_slots`), one member per live socket,
scored by when its slot lapses. A Lua script drops the lapsed members, counts and adds in one
step, so racing handshakes cannot both take the last slot. Each event loop renews its sockets'
slots together every third of ARENA_WS_SLOT_TTL_S and gives a slot back when its socket
closes; a process that is SIGKILLed stops renewing, so its slots lapse within the TTL.

The socket over the cap is accepted, sent the message (as an error frame the page shows) and
closed with 4429. Staff are not exempt: the cap protects Redis and the process, not a quota.
Only signed-in users' sockets exist (every arena socket refuses the anonymous before accepting),
so there is no per-address count. If Redis does not answer, the socket is let through (logged):
the cap must not be what takes the site down. After a Redis restart the slots are gone and
renewal does not recreate them (renewing only what exists is what keeps a socket that just
closed from coming back): sockets open then are not counted until they reconnect."""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from dataclasses import dataclass

import redis
from django.conf import settings

from arena import streams

log = logging.getLogger(__name__)
TOO_MANY = 4429  # the close code of a socket over the cap
TAKE_TIMEOUT_S = 2.0  # Redis slower than this: let the socket through rather than hold the handshake


def too_many_message(allowed: int) -> str:
    return (f"Too many open connections: you have {allowed} pages of this site streaming (the limit is "
            f"{allowed}). Close some tabs of this site, then reload this page.")


def too_many_reason(allowed: int) -> str:
    """The close frame's reason (at most 123 bytes): for clients that read no frames."""
    return f"Too many open connections (the limit is {allowed})"


# KEYS[1]: the user's slots. ARGV: limit, TTL in ms, the new socket's member.
# Returns {accepted (1/0), live sockets counting this one if accepted}.
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, ttl = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local count = redis.call('ZCARD', KEYS[1])
if count >= limit then
  return {0, count}
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, count + 1}
"""

# KEYS[1]: the user's slots. ARGV: TTL in ms, then the members to renew (XX: only those still
# there, so a slot given back meanwhile is not taken again).
_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
"""


def ttl_ms() -> int:
    return int(settings.ARENA_WS_SLOT_TTL_S * 1000)


@dataclass(frozen=True)
class Slot:
    key: str
    member: str  # "": not counted (the cap is off, or Redis did not answer): nothing to give back


class Slots:
    """One event loop's slots: taken at the handshake, renewed by one task, given back on close."""

    def __init__(self):
        self.held: dict[str, set[str]] = {}  # a user's key -> the members of this loop's sockets
        self.renewer: asyncio.Task | None = None

    def _client(self):
        return streams.shared().client  # the loop's pool (it reconnects by itself once idle)

    async def take(self, user_id) -> Slot | None:
        """A slot for one more socket of this user; None: the user has the most allowed."""
        key = streams.keys().socket_slots(user_id)
        allowed = settings.ARENA_MAX_SOCKETS_PER_USER
        if allowed <= 0:
            return Slot(key, "")
        member = uuid.uuid4().hex
        script = self._client().register_script(_TAKE)
        try:
            async with asyncio.timeout(TAKE_TIMEOUT_S):
                accepted, _count = await script(keys=[key], args=[allowed, ttl_ms(), member])
        except (redis.RedisError, TimeoutError):
            log.warning("Socket cap not checked for user %s: Redis did not answer", user_id, exc_info=True)
            return Slot(key, "")
        if not accepted:
            return None
        self.held.setdefault(key, set()).add(member)
        if self.renewer is None or self.renewer.done():
            self.renewer = asyncio.get_running_loop().create_task(self._renew(), name="arena-socket-slots")
        return Slot(key, member)

    async def release(self, slot: Slot) -> None:
        if not slot.member:
            return
        members = self.held.get(slot.key, set())
        members.discard(slot.member)
        if not members:
            self.held.pop(slot.key, None)
        try:
            await self._client().zrem(slot.key, slot.member)
        except redis.RedisError:  # it lapses by itself within the TTL
            log.warning("Could not give back a socket slot of %s", slot.key)

    async def _renew(self) -> None:
        script = self._client().register_script(_RENEW)
        while self.held:
            await asyncio.sleep(settings.ARENA_WS_SLOT_TTL_S / 3)
            for key, members in list(self.held.items()):
                if not members:
                    continue
                try:
                    await script(keys=[key], args=[ttl_ms(), *members])
                except redis.RedisError:  # Redis gone: the next round tries again
                    log.warning("Could not renew the socket slots of %s", key)


_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Slots] = weakref.WeakKeyDictionary()


def slots() -> Slots:
    """This event loop's slots (made on first use)."""
    loop = asyncio.get_running_loop()
    found = _slots.get(loop)
    if found is None:
        found = _slots[loop] = Slots()
    return found
