"""A WebSocket opened with a session closes (4401) when that session logs out; the same user's
socket from another session (another browser) stays open (arena/accounts/sockets.py)."""

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from arena.accounts import sockets

from .status_sockets import browser, close_code, status_socket

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_superuser("boss", password="boss-pass-123")


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
