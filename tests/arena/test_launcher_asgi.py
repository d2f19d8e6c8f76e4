"""The launcher's ASGI server (uvicorn): one process on the port, or ARENA_ASGI_PROCESSES of them
accepting from one listening socket that the launcher opens; one that dies is started again on the
same socket. Real uvicorn processes (serving the test settings), no Celery, orchestrator or model."""

import os
import signal
import time
import uuid

import psutil
import pytest
import requests
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from arena import launcher


def answers(url: str) -> bool:
    try:
        requests.get(url, timeout=2)
        return True
    except requests.RequestException:
        return False


def wait_until(check, timeout: float = 60) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


def asgi_launcher(processes: int) -> launcher.Launcher:
    env = {**os.environ, "ARENA_ASGI_PROCESSES": str(processes), "DJANGO_SETTINGS_MODULE": "tests.settings"}
    return launcher.Launcher(env)


def test_two_processes_serve_one_port_and_one_that_dies_comes_back_on_it():
    starter = asgi_launcher(2)
    port = launcher.free_port()
    url = f"http://127.0.0.1:{port}/static/missing.css"
    try:
        starter.start_asgi(str(port))
        assert [name for name, _ in starter.procs] == ["web-1", "web-2"]
        assert wait_until(lambda: answers(url))
        first = starter.procs[0][1]
        psutil.Process(first.pid).kill()
        first.wait(timeout=10)
        assert answers(url)  # the other one still accepts
        assert starter.restart(0)
        again = starter.procs[0][1]
        assert again is not first and again.poll() is None
        starter.procs[1][1].kill()  # only the restarted one is left to answer
        starter.procs[1][1].wait(timeout=10)
        assert wait_until(lambda: answers(url))
    finally:
        starter.stop()
    assert all(proc.poll() is not None for _name, proc in starter.procs)


def test_one_process_on_loopback_refuses_a_foreign_origin_and_stops_on_sigterm_with_a_connection_open():
    """A handshake the origin check closes gets 403 from the server itself; SIGTERM (the launcher's
    stop) ends the server by itself, well within the launcher's grace, though a client still holds
    a keep-alive connection."""
    starter = asgi_launcher(1)
    port = launcher.free_port()
    base = f"http://127.0.0.1:{port}/"
    try:
        starter.start_asgi(str(port))
        (name, server), = starter.procs
        assert name == "web" and wait_until(lambda: answers(base + "static/missing.css"))
        listening = [c.laddr for c in psutil.Process(server.pid).net_connections() if c.status == "LISTEN"]
        assert [address.ip for address in listening] == ["127.0.0.1"]
        with pytest.raises(InvalidStatus) as refused:
            connect(f"ws://127.0.0.1:{port}/ws/generations/{uuid.uuid4()}/",
                    additional_headers={"Origin": "http://evil.example"}, open_timeout=10)
        assert refused.value.response.status_code == 403
        with requests.Session() as client:
            client.get(base + "static/missing.css", timeout=5)  # the connection stays open
            started = time.monotonic()
            starter.stop()
            assert time.monotonic() - started < launcher.STOP_GRACE_S
        assert server.returncode == -signal.SIGTERM  # uvicorn ends with the signal it got, not killed (-9)
    finally:
        starter.stop()
