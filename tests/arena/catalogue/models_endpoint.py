"""A real HTTP server on 127.0.0.1 (a thread of the test process) that answers GET /v1/models as
an OpenAI-compatible endpoint does, only for its one key, for the catalogue's check before
enabling. Each behaviour has a base URL of its own: good (lists its models), slow (answers
after `slow_s`), broken (HTTP 500), html (not JSON), json (a JSON service that is no endpoint:
it names itself), moved (HTTP 307 to `moved_to`, another server, with the same path)."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEY = "sk-catalogue-check-Zq7vRw2Lm9XpT4"
MODELS = ("team/model-a", "team/model-b")
# What an inside service that is no OpenAI-compatible endpoint answers: words a probe could learn.
JSON_SERVICE = {"service": "inventory-db-Kx3", "status": "ready", "data": "internal-7Fq"}


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens any more: its connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ModelsEndpoint

    def log_message(self, *args):
        pass

    def do_GET(self):
        mode, _, rest = self.path.lstrip("/").partition("/")
        self.server.seen.append((self.path, self.headers.get("authorization", "")))
        if mode == "moved":  # any path, GET or POST
            self.send_response(307)
            self.send_header("Location", self.server.moved_to + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if rest != "v1/models":
            return self._send(404, b'{"error": {"message": "Not found"}}')
        if mode == "slow":
            time.sleep(self.server.slow_s)
        if mode == "broken":
            return self._send(500, b'{"error": {"message": "boom"}}')
        if mode == "html":
            return self._send(200, b"<html>Welcome to nginx</html>", "text/html")
        if mode == "json":
            return self._send(200, json.dumps(JSON_SERVICE).encode())
        if self.headers.get("authorization") != f"Bearer {self.server.key}":
            # A careless server echoes the key it refused: the check must not repeat it.
            said = self.headers.get("authorization", "")
            return self._send(401, json.dumps({"error": {"message": f"Incorrect API key: {said}"}}).encode())
        body = {"object": "list", "data": [{"id": m, "object": "model"} for m in self.server.models]}
        return self._send(200, json.dumps(body).encode())

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.do_GET()

    def _send(self, status: int, body: bytes, kind: str = "application/json"):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class ModelsEndpoint(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, key: str = KEY, models=MODELS, slow_s: float = 2.0):
        super().__init__(("127.0.0.1", 0), Handler)
        self.key, self.models, self.slow_s = key, list(models), slow_s
        self.seen: list[tuple[str, str]] = []
        self.moved_to = ""  # where "moved" sends a client: another server's http://host:port

    def url(self, mode: str = "good", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.server_address[1]}/{mode}/v1"

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()
