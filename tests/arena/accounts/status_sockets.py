"""Driving the staff status page's WebSocket (/ws/status/) in-process: a logged-in browser's
session, a socket opened with it, and the code the server closes it with."""

import asyncio

from django.conf import settings
from django.test import Client

from arena.asgi import application
from tests.arena.socket_client import WebsocketCommunicator


def browser(user) -> tuple[Client, str]:
    client = Client()
    client.force_login(user)
    return client, client.cookies[settings.SESSION_COOKIE_NAME].value


def status_socket(session: str) -> WebsocketCommunicator:
    headers = [(b"cookie", f"{settings.SESSION_COOKIE_NAME}={session}".encode()),
               (b"origin", f"http://localhost:{settings.PORT}".encode()), (b"host", b"localhost")]
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
