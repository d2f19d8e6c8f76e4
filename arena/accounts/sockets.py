"""A session's WebSockets close when it logs out, and a user's when the user is deactivated.

Sockets authenticate from the session cookie once, at the handshake; without this one
opened before a logout would go on streaming to whoever holds the page. Every accepted
arena socket (arena.generations.consumers.ArenaSocket) registers under a digest of its
session key in its event loop's registry; logging out (Django's `user_logged_out`, before
the session is flushed) publishes that digest on a Redis channel (`Keys.logged_out`), and
each server process's listener closes its sockets of that session with code 4401. Only the
session that logged out: the same user's other sessions (another browser) keep theirs.
Each socket also registers under a digest of its user: a user saved with is_active False (the
admin, a shell, anything that saves the model; a queryset `update()` sends no signal) has that
digest published on the same channel, and every socket of the user closes (4401), in every
process. A deactivated user's session no longer authenticates, so none opens again.

There is no Channels layer (arena/settings.py says why), hence Redis pub/sub: one
subscription per event loop (per web server process), opened with its first socket and closed
with its last. Logging out never fails because Redis is down; the sockets then stay open
until they close by themselves, as before."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import weakref

from arena import streams

log = logging.getLogger(__name__)
LOGGED_OUT = 4401  # the close code a socket gets when its session logs out
RESUBSCRIBE_S = 1.0


def session_digest(session_key: str) -> str:
    """What goes over Redis instead of the session key itself (a session key is a credential)."""
    return hashlib.sha256(f"arena-session:{session_key}".encode()).hexdigest()


def user_digest(user_id) -> str:
    return hashlib.sha256(f"arena-user:{user_id}".encode()).hexdigest()


def _publish(digest: str) -> None:
    streams.client().publish(streams.keys().logged_out(), digest)


def close_on_deactivation(sender, instance, created, **kwargs) -> None:
    """`post_save` of the user model: an inactive user's sockets close in every process."""
    if created or instance.is_active:
        return
    try:
        _publish(user_digest(instance.pk))
    except Exception:  # saving a user must succeed without Redis
        log.warning("Could not tell the server processes to close a deactivated user's sockets")


def close_on_logout(sender, request, user, **kwargs) -> None:
    """`user_logged_out`: tell every server process to close this session's sockets."""
    session = getattr(request, "session", None)
    key = getattr(session, "session_key", None)
    if not key:
        return
    try:
        _publish(session_digest(key))
    except Exception:  # a logout must succeed without Redis
        log.warning("Could not tell the server processes to close a logged-out session's sockets")


class Registry:
    """One event loop's open sockets by digest (of their session, and of their user), and the
    subscription that closes them."""

    def __init__(self):
        self.sockets: dict[str, set] = {}
        self.listener: asyncio.Task | None = None
        self.ready = asyncio.Event()  # set once subscribed (tests wait for it)

    def add(self, digest: str, socket) -> None:
        self.sockets.setdefault(digest, set()).add(socket)
        if self.listener is None or self.listener.done():
            self.ready.clear()
            self.listener = asyncio.get_running_loop().create_task(self._listen())

    async def remove(self, digest: str, socket) -> None:
        group = self.sockets.get(digest)
        if group is not None:
            group.discard(socket)
            if not group:
                del self.sockets[digest]
        if not self.sockets and self.listener is not None:
            listener, self.listener = self.listener, None
            await streams.stop_task(listener, "The logged-out sessions listener")

    async def close_session(self, digest: str) -> None:
        for socket in list(self.sockets.get(digest, ())):
            with contextlib.suppress(Exception):  # one already closing must not stop the rest
                await socket.close(code=LOGGED_OUT)

    async def _listen(self) -> None:
        channel = streams.keys().logged_out()
        while True:
            client = streams.async_client()
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(channel)
                self.ready.set()
                while True:
                    message = await pubsub.get_message(timeout=streams.SOCKET_TIMEOUT_S / 2)
                    if message and message.get("type") == "message":
                        data = message["data"]
                        await self.close_session(data.decode() if isinstance(data, bytes) else str(data))
            except asyncio.CancelledError:
                raise
            except Exception:  # Redis restarted or unreachable: subscribe again
                log.warning("The logged-out sessions channel was lost; subscribing again", exc_info=True)
                await asyncio.sleep(RESUBSCRIBE_S)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
                with contextlib.suppress(Exception):
                    await client.aclose()


_registries: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Registry] = weakref.WeakKeyDictionary()


def registry() -> Registry:
    loop = asyncio.get_running_loop()
    found = _registries.get(loop)
    if found is None:
        found = _registries[loop] = Registry()
    return found


def scope_digests(scope) -> list[str]:
    """The digests a socket is closed by: its session's (if it has a session cookie) and its user's."""
    session = scope.get("session")
    key = getattr(session, "session_key", None) if session is not None else None
    user = scope.get("user")
    digests = [session_digest(key)] if key else []
    if user is not None and user.is_authenticated:
        digests.append(user_digest(user.pk))
    return digests
