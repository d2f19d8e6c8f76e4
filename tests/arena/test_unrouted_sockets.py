"""A WebSocket handshake on a path no route matches (arena/routing.py's catch-all): refused like a
socket that is not there (4404 before accepting; the server answers 403), in one log line.

Issue 39: `/ws/generations/not-a-uuid/` and `/ws/nothing/` got a 500 without any login, and each
wrote a full traceback to the log (Channels' URLRouter raised ValueError): a log flood for anyone.
Checked in-process (the whole stack: origin check, session, router) and on a real uvicorn."""

import logging
import os
import signal
import subprocess
import time
import uuid

import pytest
import requests
from asgiref.sync import async_to_sync
from django.conf import settings
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from arena import launcher
from arena.asgi import application  # at import: it sets up logging again, which a test's caplog must follow
from tests.arena.socket_client import WebsocketCommunicator

UNROUTED = ["/ws/nothing/", "/ws/generations/not-a-uuid/", "/ws/battles/42/", "/ws/status/extra/", "/",
            "/ws/generations/" + "x" * 5000 + "/", "/ws/a\nfake log line/"]
REFUSED_LINE = "WebSocket refused (no such socket)"


async def handshake(path: str, origin: str) -> tuple[bool, int | None]:
    comm = WebsocketCommunicator(application, path, headers=[(b"host", b"127.0.0.1"), (b"origin", origin.encode())])
    connected, code = await comm.connect(timeout=5)
    if connected:
        await comm.disconnect()
    return connected, code


@pytest.mark.django_db
def test_an_unrouted_path_is_refused_like_a_missing_socket_in_one_log_line(caplog):
    own = f"http://127.0.0.1:{settings.PORT}"
    for path in UNROUTED:
        caplog.clear()
        with caplog.at_level(logging.INFO):
            assert async_to_sync(handshake)(path, own) == (False, 4404), path
        records = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert [r.getMessage().startswith(REFUSED_LINE) for r in records] == [True], (path, caplog.text)
        assert records[0].exc_info is None and "\n" not in records[0].getMessage()
        assert len(records[0].getMessage()) < 300  # the path is the client's: capped
    caplog.clear()
    # A foreign page is refused by the origin check first, as before, without a line.
    with caplog.at_level(logging.INFO):
        assert async_to_sync(handshake)("/ws/nothing/", "http://evil.example") == (False, 1000)
    assert REFUSED_LINE not in caplog.text


def answers(url: str) -> bool:
    try:
        requests.get(url, timeout=2)
        return True
    except requests.RequestException:
        return False


def refused_status(url: str, origin: str) -> int:
    with pytest.raises(InvalidStatus) as refused:
        connect(url, additional_headers={"Origin": origin}, open_timeout=10)
    return refused.value.response.status_code


def test_a_real_uvicorn_answers_unrouted_paths_with_403_and_one_line_each(tmp_path):
    """The launcher's own uvicorn command (its log level, arena.asgi) with PORT set as the launcher
    sets it: the site's origin reaches the router, a page on another port of the machine does not."""
    port = launcher.free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PORT": str(port)}
    log_path = tmp_path / "uvicorn.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(launcher.asgi_command(["--host", "127.0.0.1", "--port", str(port)]),
                                  cwd=launcher.ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        deadline = time.time() + 60
        while not answers(f"http://127.0.0.1:{port}/static/missing.css"):
            assert time.time() < deadline and server.poll() is None, log_path.read_text()
            time.sleep(0.2)
        base, own = f"ws://127.0.0.1:{port}", f"http://127.0.0.1:{port}"
        for path in ("/ws/nothing/", "/ws/generations/not-a-uuid/"):
            assert refused_status(base + path, own) == 403, path
        assert refused_status(base + "/ws/nothing/", "http://127.0.0.1:9999") == 403  # the origin check's
        assert refused_status(base + f"/ws/generations/{uuid.uuid4()}/", own) == 403  # routed, not logged in
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    text = log_path.read_text()
    lines = [line for line in text.splitlines() if REFUSED_LINE in line]
    assert len(lines) == 2, text
    assert "'/ws/nothing/'" in lines[0] and "'/ws/generations/not-a-uuid/'" in lines[1]
    assert "Traceback" not in text and "Exception in ASGI application" not in text and " 500" not in text, text
