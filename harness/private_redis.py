"""A redis-server of a test's own, which the test may kill and start again (the shared one
on 6379 is everyone's: never restart that). Like this project's Redis, it keeps nothing
on disk, so a restart comes back empty. It may also ask for a password (`requirepass`) and
speak only TLS, with a throwaway CA and certificates made for it (`make_tls_files`), as a
Redis shared between machines should (docs/operations.md, "Redis across machines"). Where
redis-server or openssl is missing the calling test is skipped (pytest.skip; for a benchmark,
an exception that says which)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from inference import redis_connect


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the CA that signed both certificates
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    def client_env(self) -> dict[str, str]:
        """What a process of the arena is given to reach the server (inference/redis_connect.py)."""
        return {"ARENA_REDIS_TLS_CA": str(self.ca), "ARENA_REDIS_TLS_CERT": str(self.client_cert),
                "ARENA_REDIS_TLS_KEY": str(self.client_key)}


def make_tls_files(directory: Path) -> TlsFiles:
    """A throwaway CA, a server certificate for 127.0.0.1 and a client certificate (openssl CLI)."""
    if not shutil.which("openssl"):
        pytest.skip("openssl is not installed")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "1",
        "-subj", "/CN=arena-test-ca")
    (directory / "server.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name in ("server", "client"):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", f"/CN=arena-test-{name}")
        extra = ["-extfile", "server.ext"] if name == "server" else []
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", "1", *extra)
    return TlsFiles(directory / "ca.crt", directory / "server.crt", directory / "server.key",
                    directory / "client.crt", directory / "client.key")


class PrivateRedis:
    """`password`: the server's requirepass (clients put it in the URL), or with `username` an
    ACL user's (the default user then off), kept to the keys and channels of `acl_prefix` when
    given, by the rule docs/operations.md recommends; `tls`: it speaks only TLS (rediss://) and
    asks every client for a certificate signed by the same CA."""

    def __init__(self, password: str | None = None, tls: TlsFiles | None = None, username: str | None = None,
                 acl_prefix: str | None = None):
        self.server = shutil.which("redis-server")
        if not self.server:
            pytest.skip("redis-server is not installed")
        self.port = _free_port()
        self.dir = tempfile.mkdtemp(prefix="arena-private-redis-")
        self.password, self.tls, self.username, self.acl_prefix = password, tls, username, acl_prefix
        auth = f"{username or ''}:{password}@" if password else ""
        self.url = f"{'rediss' if tls else 'redis'}://{auth}127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None
        self.restarts = 0

    def env(self) -> dict[str, str]:
        """The environment variables a process of the arena needs to reach this server."""
        return {"REDIS_URL": self.url, **(self.tls.client_env() if self.tls else {})}

    def client(self, **options) -> redis.Redis:
        return redis_connect.connect(self.url, **redis_connect.tls_options(self.url, self.env()), **options)

    def _command(self) -> list[str]:
        cmd = [self.server, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", self.dir]
        if self.password and self.username:
            cmd += ["--user", "default", "off", "--user", self.username, "on", f">{self.password}", *self._acl_rule()]
        elif self.password:
            cmd += ["--requirepass", self.password]
        if not self.tls:
            return [*cmd, "--port", str(self.port)]
        return [*cmd, "--port", "0", "--tls-port", str(self.port), "--tls-cert-file", str(self.tls.server_cert),
                "--tls-key-file", str(self.tls.server_key), "--tls-ca-cert-file", str(self.tls.ca),
                "--tls-auth-clients", "yes"]

    def _acl_rule(self) -> list[str]:
        """Every key and channel, or only the prefix's (Celery's remote-control channel named
        literally: Celery subscribes to it as a pattern, and ACLs match patterns literally)."""
        if not self.acl_prefix:
            return ["~*", "&*", "+@all"]
        prefix = self.acl_prefix
        return [f"~{prefix}:*", f"&{prefix}:*", f"&{prefix}:celery:/0.celery.pidbox", "+@all"]

    def start(self) -> None:
        # The password reaches the server on its command line: a test's throwaway one (in
        # production it belongs in redis.conf, docs/operations.md).
        self.proc = subprocess.Popen(self._command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                if self.client(socket_connect_timeout=0.5).ping():
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
