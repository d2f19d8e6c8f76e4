"""An OpenAI-compatible server that fails on purpose, one way per model name, for the
endpoint engine's error tests. A real HTTP server on 127.0.0.1 (a thread of the test
process), speaking just enough of the chat completions API to fail realistically."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ECHOED_KEY_PREFIX = "Incorrect API key provided: "


def chunk(text: str | None = None, finish: str | None = None) -> bytes:
    delta = {"content": text} if text is not None else {}
    body = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class FaultyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FaultyServer

    def log_message(self, *args):  # quiet test output
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        model = body.get("model", "")
        self.server.requests.append((model, self.headers.get("authorization", "")))
        getattr(self, "_" + model.replace("-", "_"), self._unknown)()

    # -- one behaviour per model name

    def _ok(self):
        self._sse([chunk("Hello"), chunk(" there"), chunk(finish="stop"), b"data: [DONE]\n\n"])

    def _wrong_key(self):  # OpenAI echoes part of the key it refused; a careless server echoes all of it
        auth = self.headers.get("authorization", "").removeprefix("Bearer ")
        self._json(401, {"error": {"message": ECHOED_KEY_PREFIX + auth, "type": "invalid_request_error"}})

    def _forbidden(self):
        self._json(403, {"error": {"message": "This key may not use this model."}})

    def _rate_limited_once(self):
        self.server.hits["rate_limited_once"] = self.server.hits.get("rate_limited_once", 0) + 1
        if self.server.hits["rate_limited_once"] == 1:
            self._json(429, {"error": {"message": "Slow down."}}, {"Retry-After": "1"})
        else:
            self._ok()

    def _rate_limited_long(self):
        self._json(429, {"error": {"message": "Quota exhausted."}}, {"Retry-After": "120"})

    def _server_error(self):
        self._json(500, {"error": {"message": "The engine crashed\nwith a traceback"}})

    def _context(self):
        self._json(400, {"error": {"message": "the request exceeds the available context size, try increasing it",
                                   "type": "exceed_context_size_error"}})

    def _cut(self):  # two tokens, then the connection drops: no finish, no [DONE]
        self._sse([chunk("Half"), chunk(" an answer")], close=True)

    def _no_done(self):  # finished properly, only the closing [DONE] is missing
        self._sse([chunk("Complete"), chunk(finish="length")], close=True)

    def _garbage(self):
        self._sse([chunk("Fine"), b"data: <html>Bad gateway</html>\n\n"])

    def _wrong_shape(self):
        self._sse([b'data: {"choices": [{"delta": {"content": 42}}]}\n\n'])

    def _error_event(self):
        self._sse([chunk("Hi"), b'data: {"error": {"message": "model overloaded"}}\n\n'])

    def _silent(self):  # headers, then nothing for longer than the client's read timeout
        self._sse([], hold_s=self.server.silence_s)

    def _slow(self):  # a token every 0.2 s, for cancellation
        for i in range(200):
            if i == 0:
                self._start_sse()
            try:
                self._write_chunk(chunk(f" t{i}"))
            except OSError:  # the client hung up: what a cancel looks like from here
                self.server.hangups.append("slow")
                return
            time.sleep(0.2)

    def _unknown(self):
        self._json(404, {"error": {"message": f"The model `{self.path}` does not exist", "code": "model_not_found"}})

    # -- writing

    def _json(self, status: int, body: dict, headers: dict | None = None):
        raw = json.dumps(body).encode()
        self.send_response(status)
        for name, value in {"content-type": "application/json", "content-length": str(len(raw)),
                            **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def _start_sse(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def _write_chunk(self, data: bytes):
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _sse(self, parts: list[bytes], close: bool = False, hold_s: float = 0.0):
        self._start_sse()
        for part in parts:
            self._write_chunk(part)
        time.sleep(hold_s)
        if close:  # no terminating zero-length chunk: the body is cut
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")


class FaultyServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, silence_s: float = 3.0):
        super().__init__(("127.0.0.1", 0), FaultyHandler)
        self.silence_s = silence_s
        self.requests: list[tuple[str, str]] = []
        self.hits: dict[str, int] = {}
        self.hangups: list[str] = []
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    def handle_error(self, request, client_address):  # a client hanging up is expected here
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()
