"""A redis-server of a test's own, which the test may kill and start again (the shared one
on 6379 is everyone's: never restart that). Like this project's Redis, it keeps nothing
on disk, so a restart comes back empty."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time

import pytest
import redis


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    def __init__(self):
        self.server = shutil.which("redis-server")
        if not self.server:
            pytest.skip("redis-server is not installed")
        self.port = _free_port()
        self.dir = tempfile.mkdtemp(prefix="arena-private-redis-")
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None
        self.restarts = 0

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                if redis.Redis.from_url(self.url, socket_connect_timeout=0.5).ping():
                    return
            except redis.RedisError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def kill(self) -> None:
        """SIGKILL: every client's connection drops, and everything it held is gone."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def restart(self, down_s: float = 0.0) -> None:
        """Kill it, stay down `down_s`, start it again on the same port (empty)."""
        self.kill()
        time.sleep(down_s)
        self.start()
        self.restarts += 1

    def stop(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def private_redis():
    server = PrivateRedis()
    server.start()
    yield server
    server.stop()
