"""A WebSocket opened with a session closes (4401) when that session logs out; the same user's
socket from another session (another browser) stays open (arena/accounts/sockets.py)."""

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from arena.accounts import sockets
from arena.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_superuser("boss", password="boss-pass-123")


def browser(user) -> tuple[Client, str]:
    client = Client()
    client.force_login(user)
    return client, client.cookies[settings.SESSION_COOKIE_NAME].value


def status_socket(session: str) -> WebsocketCommunicator:
    headers = [(b"cookie", f"{settings.SESSION_COOKIE_NAME}={session}".encode()),
               (b"origin", b"http://localhost"), (b"host", b"localhost")]
    return WebsocketCommunicator(application, "/ws/status/", headers=headers)


async def close_code(comm, timeout: float = 5.0) -> int | None:
    """Read frames until the socket is closed by the server; its close code (None: still open after
    `timeout`). Waits with receive_nothing: a receive_output that times out would cancel the app."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if await comm.receive_nothing(timeout=0.1):
            continue
        message = await comm.receive_output(timeout=1)
        if message["type"] == "websocket.close":
            return message.get("code", 1000)
    return None


async def test_logging_out_closes_that_sessions_sockets_only(staff):
    (first, first_session), (second, second_session) = await sync_to_async(lambda: (browser(staff), browser(staff)))()
    mine, other = status_socket(first_session), status_socket(second_session)
    assert (await mine.connect(timeout=5))[0] and (await other.connect(timeout=5))[0]
    await asyncio.wait_for(sockets.registry().ready.wait(), 5)

    response = await sync_to_async(first.post)("/accounts/logout/")
    assert response.status_code == 302
    assert await close_code(mine) == sockets.LOGGED_OUT
    await mine.disconnect()  # what the server does once the browser has the close
    assert await close_code(other, timeout=1.5) is None  # the other browser's session still holds
    # That session can no longer open one; the other still can.
    refused = status_socket(first_session)
    assert (await refused.connect(timeout=5)) == (False, 4403)
    await other.disconnect()

    await sync_to_async(second.post)("/accounts/logout/")
    assert sockets.registry().sockets == {}  # every socket left the registry as it closed


async def test_a_logout_without_sockets_or_redis_still_logs_out(staff, monkeypatch):
    client, _session = await sync_to_async(browser)(staff)

    def broken():
        raise ConnectionError("Redis is down")

    monkeypatch.setattr(sockets.streams, "client", broken)
    response = await sync_to_async(client.post)("/accounts/logout/")
    assert response.status_code == 302
    assert (await sync_to_async(client.get)("/status/")).status_code == 302  # logged out
