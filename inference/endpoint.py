"""Serving from an OpenAI-compatible server: a managed server's, or a remote endpoint.

`EndpointEngine` says how to reach the server; `EndpointDecoder` is the scheduler's
decoder for it (`inference.decoding.Decoder`): each request streams its chat
completion (or, for a base model, a plain-text completion) on a thread of its own,
and `step` hands the scheduler whatever chunks have arrived, so the server's own
batching serves concurrent requests while the scheduler writes events, cancels and
ends jobs exactly as for a local model. Cancelling closes the request's HTTP stream
(llama.cpp and vLLM stop generating when their client goes).

`StreamReader` reads a completion's OpenAI chunks, here from server-sent events and for the
llamacpp engine from llama.cpp's callback (`inference.llamacpp_decoder`, which shares
`ThreadedDecoder` too).

Every way a request can fail becomes a `Failure` chunk with a reason a user can
read: the key refused, an unknown model, rate limiting (a short Retry-After is
waited out, a long one reported), timeouts, a refused connection, a malformed or
cut stream. The API key is sent, never repeated in a message or a log line.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx

from inference import protocol
from inference.chunks import FINISH_CANCELLED, FINISH_LENGTH, FINISH_STOP, Chunk, Failure, Finish, TokenChunk
from inference.decoding import StopText, with_stop_sequences
from inference.protocol import SamplingParams, plain_text
from inference.structured import REGEX_UNSUPPORTED

log = logging.getLogger(__name__)

STEP_WAIT_S = 0.02  # how long `step` waits for a first chunk before giving the scheduler its turn
RETRY_AFTER_MAX_S = 20.0  # a 429 asking for a longer wait is reported instead of waited out
RATE_LIMIT_RETRIES = 2
ERROR_TEXT_CHARS = 200  # how much of an endpoint's own error message a user is shown


@dataclass(frozen=True)
class EndpointEngine:
    """An OpenAI-compatible server that serves one model (`inference.decoding.Prompter`)."""

    base_url: str  # up to and including the API's version, e.g. http://127.0.0.1:8080/v1
    model: str
    api_key: str = field(default="", repr=False)
    api_key_env: str = ""  # where the key came from: named in messages about it, never the key
    base: bool = False  # a base model: the conversation as plain text to /completions, no chat template
    max_concurrency: int = 0  # requests streamed at once (0: the worker's batch size)
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 120.0  # silence this long, before or between tokens, fails the request

    counts_tokens = False  # the server tokenises; its usage says how many tokens there were

    def encode(self, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        return list(messages)

    def check_context(self, prompt_tokens: int, params: SamplingParams) -> int:
        return params.max_new_tokens  # the server knows its context and refuses what does not fit

    def request(self, messages: list[dict[str, str]], params: SamplingParams) -> tuple[str, dict[str, Any]]:
        """The path and JSON body of one streamed request."""
        return completion_request(self.model, self.base, messages, params, self.constraint(params))

    def constraint(self, params: SamplingParams) -> dict[str, Any]:
        """OpenAI's strict `response_format`, which takes no regex (refused before the job:
        inference.structured; llama.cpp in the worker takes both: inference.llamacpp_decoder)."""
        if params.json_schema is not None:
            schema = {"name": "answer", "schema": params.json_schema, "strict": True}
            return {"response_format": {"type": "json_schema", "json_schema": schema}}
        if params.regex is not None:
            raise EndpointError(REGEX_UNSUPPORTED["openai"], protocol.BAD_JOB)
        return {}

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def client(self, connections: int) -> httpx.Client:
        timeout = httpx.Timeout(self.read_timeout_s, connect=self.connect_timeout_s)
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        return httpx.Client(base_url=self.base_url.rstrip("/"), timeout=timeout, limits=limits,
                            headers=self.headers(), trust_env=False)


class EndpointError(Exception):
    """A request the endpoint did not serve; `failure` is what its job is told."""

    def __init__(self, reason: str, code: str = protocol.ENGINE_ERROR, retry_after_s: float | None = None):
        super().__init__(reason)
        self.failure = Failure(reason, code)
        self.retry_after_s = retry_after_s


def completion_request(model: str, base: bool, messages: list[dict[str, str]], params: SamplingParams,
                       constraint: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The path and OpenAI JSON body of one streamed completion: a chat, or for a base model the
    conversation as plain text to continue."""
    body: dict[str, Any] = {
        "model": model,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": params.max_new_tokens,
        "temperature": params.temperature,
        "top_p": params.top_p,
        **constraint,
    }
    if params.seed is not None:
        body["seed"] = params.seed
    # No "stop": a server that stops at a stop sequence says only "stop", as at the end of an
    # answer, and hides the sequence. Cut here instead (decoding.with_stop_sequences, which
    # closes the stream, so the server stops too) and the Finish says it was a stop sequence.
    if base:
        return "/completions", {**body, "prompt": plain_text(messages)}
    return "/chat/completions", {**body, "messages": messages}


# ---------------------------------------------------------------- one request's stream


def stream_request(client: httpx.Client, engine: EndpointEngine, messages: list[dict[str, str]],
                   params: SamplingParams, cancelled: threading.Event) -> Generator[Chunk, None, None]:
    """One request's chunks: TokenChunks, then a Finish or a Failure. Waits out short rate limits."""
    try:
        path, body = engine.request(messages, params)
    except EndpointError as exc:
        yield exc.failure
        return
    for attempt in range(RATE_LIMIT_RETRIES + 1):
        try:
            yield from _stream_once(client, engine, path, body)
            return
        except EndpointError as exc:
            wait = exc.retry_after_s
            if wait is None or wait > RETRY_AFTER_MAX_S or attempt == RATE_LIMIT_RETRIES:
                yield exc.failure
                return
            log.info("Rate limited by %s: retrying in %.1f s", engine.base_url, wait)
            if cancelled.wait(wait):
                return
        except httpx.TimeoutException as exc:
            yield Failure(_timeout_reason(exc, engine), protocol.TIMEOUT)
            return
        except httpx.TransportError as exc:
            yield Failure(f"Could not reach the endpoint at {engine.base_url}: {_transport_reason(exc)}.",
                          protocol.ENGINE_ERROR)
            return


def _stream_once(client: httpx.Client, engine: EndpointEngine, path: str,
                 body: dict[str, Any]) -> Generator[Chunk, None, None]:
    with client.stream("POST", path, json=body) as response:
        if response.status_code != 200:
            raise http_error(response, engine)
        yield from read_events(_lines_until_cut(response), engine)


def _lines_until_cut(response: httpx.Response) -> Iterator[str]:
    """The body's lines; a connection dropped mid-body ends them (read_events judges the stream)."""
    try:
        yield from response.iter_lines()
    except httpx.RemoteProtocolError as exc:
        log.info("The endpoint's stream was cut: %s", exc)


def read_events(lines: Iterator[str], engine: EndpointEngine) -> Generator[Chunk, None, None]:
    """Server-sent events of a streamed completion as chunks (the stream's grammar checked)."""
    reader = StreamReader(hide=engine.api_key)
    for line in lines:
        if not line.startswith("data:"):
            continue  # blank separators, ": keep-alive" comments, "event:" names
        yield from reader.feed(line[5:].strip())
        if reader.ended:
            return
    yield reader.close()


class StreamReader:
    """One streamed completion, fed its payloads (OpenAI chunk JSON) one at a time, as chunks:
    TokenChunks, then one Finish or Failure, after which `ended`. Fed from server-sent events
    (read_events) or by llama.cpp's callback in the worker (inference.llamacpp_decoder)."""

    def __init__(self, hide: str = "", error_status: bool = False):
        self.hide = hide  # the API key: never repeated in a reason
        # llama.cpp called in-process refuses a request with its error body, whose code is the
        # HTTP status it would have answered: read as http_error reads that status.
        self.error_status = error_status
        self.ended = False
        self.generated = 0
        self.first: float | None = None
        self.last: float | None = None
        self.reason: str | None = None
        self.usage: dict[str, Any] = {}
        self.timings: dict[str, Any] = {}

    def feed(self, data: str) -> list[Chunk]:
        """The chunks of one payload ("[DONE]" ends the stream)."""
        if data == "[DONE]":
            return [self._end(self.finish())]
        try:
            event = json.loads(data)
        except ValueError:
            return [self._end(_malformed(f"a line that is not JSON ({_quote(data)})"))]
        if not isinstance(event, dict):
            return [self._end(_malformed(f"a line that is not a JSON object ({_quote(data)})"))]
        if "error" in event:
            return [self._end(self._error(event["error"]))]
        try:
            return self._read(event)
        except (TypeError, KeyError, IndexError, AttributeError, ValueError):
            return [self._end(_malformed(f"a chunk without the expected fields ({_quote(data)})"))]

    def close(self) -> Chunk:
        """The end of a stream that stopped without "[DONE]"."""
        if self.reason is not None:
            return self._end(self.finish())  # complete, only the closing [DONE] missing: the answer is whole
        return self._end(Failure("The endpoint's stream stopped before the answer was finished (no [DONE]); "
                                 "the text so far is kept.", protocol.ENGINE_ERROR))

    def finish(self) -> Finish:
        generated = _count(self.usage.get("completion_tokens"), self.generated)
        return Finish(
            self.reason or FINISH_STOP, generated, _count(self.usage.get("prompt_tokens"), 0),
            self.first, self.last,
            # llama.cpp's speculative decoding reports its drafts in `timings`
            proposed_tokens=_count(self.timings.get("draft_n"), 0),
            accepted_tokens=_count(self.timings.get("draft_n_accepted"), 0),
        )

    def _read(self, event: dict[str, Any]) -> list[Chunk]:
        if isinstance(event.get("usage"), dict):
            self.usage = event["usage"]
        if isinstance(event.get("timings"), dict):
            self.timings = event["timings"]
        out: list[Chunk] = []
        for choice in event.get("choices") or []:
            text = choice["delta"].get("content") if "delta" in choice else choice.get("text")
            if text:
                if not isinstance(text, str):
                    raise TypeError("text is not a string")
                self.last = time.time()
                self.first = self.first or self.last
                self.generated += 1
                out.append(TokenChunk(-1, text))
            if choice.get("finish_reason"):
                self.reason = FINISH_LENGTH if choice["finish_reason"] == "length" else FINISH_STOP
        return out

    def _error(self, error: Any) -> Failure:
        said = _error_text(error, hide=self.hide)
        status = error.get("code") if isinstance(error, dict) else None
        if self.error_status and isinstance(status, int) and not isinstance(status, bool):
            return status_error(status, f": {said}" if said else "").failure
        return Failure(f"The endpoint failed while generating: {said}", protocol.ENGINE_ERROR)

    def _end(self, chunk: Chunk) -> Chunk:
        self.ended = True
        return chunk


def _count(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


# ---------------------------------------------------------------- errors a user can read


def http_error(response: httpx.Response, engine: EndpointEngine) -> EndpointError:
    """An error response as a reason a user can act on."""
    status = response.status_code
    detail = _error_text(_error_body(response), hide=engine.api_key)  # some servers echo the key they refused
    said = f": {detail}" if detail else ""
    if status in (401, 403):
        where = f" in the environment variable {engine.api_key_env}" if engine.api_key_env else ""
        return EndpointError(f"The endpoint refused the API key{where} (HTTP {status}){said}.")
    if status == 404:
        return EndpointError(f"The endpoint at {engine.base_url} does not serve the model "
                             f"'{engine.model}' (HTTP 404){said}.")
    if status == 429:
        wait = retry_after(response.headers.get("retry-after"))
        when = f"; it asks to retry in {wait:g} s" if wait is not None else ""
        return EndpointError(f"The endpoint is rate limiting requests (HTTP 429){when}{said}.",
                             protocol.BUSY, retry_after_s=wait)
    return status_error(status, said)


def status_error(status: int, said: str) -> EndpointError:
    """A request refused with `status` (`said`: ": the server's message", or ""), past the refusals
    that only a remote server gives (key, model, rate)."""
    if status == 400 and "context" in said.lower():
        return EndpointError(f"The prompt does not fit this model's context (HTTP 400){said}.",
                             protocol.PROMPT_TOO_LONG)
    return EndpointError(f"The endpoint answered HTTP {status}{said}.")


def retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (the HTTP-date form is not used by these APIs, and is ignored)."""
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 <= seconds < 86400 else None


def _error_body(response: httpx.Response) -> Any:
    raw = b""
    for piece in response.iter_bytes():  # a bounded read: an error body may be huge
        raw += piece
        if len(raw) > 4096:
            break
    text = raw[:4096].decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _error_text(error: Any, hide: str = "") -> str:
    """The message inside OpenAI's {"error": {"message"}} (or a bare string), short, on one line,
    with `hide` (the key) taken out before it is cut short."""
    if isinstance(error, dict):
        error = error.get("error", error)
    if isinstance(error, dict):
        error = error.get("message") or ""
    text = " ".join(str(error or "").split())
    if hide:
        text = text.replace(hide, "[key]")
    return text[:ERROR_TEXT_CHARS] + ("…" if len(text) > ERROR_TEXT_CHARS else "")


def _malformed(what: str) -> Failure:
    return Failure(f"The endpoint sent something that is not a completion stream: {what}.", protocol.ENGINE_ERROR)


def _quote(data: str) -> str:
    return json.dumps(data[:60] + ("…" if len(data) > 60 else ""))


def _timeout_reason(exc: httpx.TimeoutException, engine: EndpointEngine) -> str:
    if isinstance(exc, httpx.ConnectTimeout):
        return f"The endpoint at {engine.base_url} did not accept a connection within {engine.connect_timeout_s:g} s."
    return f"The endpoint stopped answering for {engine.read_timeout_s:g} s."


def _transport_reason(exc: httpx.TransportError) -> str:
    text = str(exc).lower()
    if "refused" in text:
        return "connection refused"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the connection closed in the middle of the answer"
    return " ".join(str(exc).split())[:ERROR_TEXT_CHARS] or type(exc).__name__


# ---------------------------------------------------------------- the scheduler's decoder


class ThreadedRow:
    """One request whose chunks arrive on a thread of its own, into its decoder's inbox."""

    def __init__(self, inbox: queue.SimpleQueue[tuple[Any, Chunk]], tag: Any, name: str):
        self.tag = tag
        self.cancelled = threading.Event()
        self.generated = 0  # what the scheduler has been handed, for a cancelled row's Finish
        self.first: float | None = None
        self.last: float | None = None
        self._inbox = inbox
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        raise NotImplementedError

    def note(self, chunk: Chunk) -> None:
        if isinstance(chunk, TokenChunk):
            self.generated += 1
            self.last = time.time()
            self.first = self.first or self.last

    def cancelled_finish(self) -> Finish:
        return Finish(FINISH_CANCELLED, self.generated, 0, self.first, self.last)


RowT = TypeVar("RowT", bound=ThreadedRow)


class ThreadedDecoder(Generic[RowT]):
    """The scheduler's decoder over rows that stream on threads of their own (`join` starts one):
    `step` hands over whatever chunks have arrived, `cancel` sets a row's flag (its thread stops
    its request) and gives its Finish at once."""

    def __init__(self) -> None:
        self.inbox: queue.SimpleQueue[tuple[RowT, Chunk]] = queue.SimpleQueue()
        self.rows: set[RowT] = set()

    def __len__(self) -> int:
        return len(self.rows)

    def start(self, row: RowT) -> tuple[RowT, list[Chunk]]:
        self.rows.add(row)
        row.thread.start()
        return row, []

    def step(self) -> list[tuple[RowT, Chunk]]:
        """Every chunk that has arrived (waiting up to STEP_WAIT_S for the first)."""
        try:
            arrived = [self.inbox.get(timeout=STEP_WAIT_S)]
        except queue.Empty:
            return []
        while True:
            try:
                arrived.append(self.inbox.get_nowait())
            except queue.Empty:
                break
        out = []
        for row, chunk in arrived:
            if row not in self.rows:
                continue  # cancelled meanwhile: its Finish has been given
            row.note(chunk)
            if isinstance(chunk, (Finish, Failure)):
                self.rows.discard(row)
            out.append((row, chunk))
        return out

    def cancel(self, rows: Sequence[RowT]) -> list[tuple[RowT, Finish]]:
        out = []
        for row in rows:
            if row in self.rows:
                row.cancelled.set()  # the row's thread stops its request
                self.rows.discard(row)
                out.append((row, row.cancelled_finish()))
        return out

    def reset(self) -> None:
        self.cancel(list(self.rows))


class EndpointRow(ThreadedRow):
    """One request to an endpoint: its HTTP stream, read on the row's thread."""

    def __init__(self, decoder: EndpointDecoder, messages: list[dict[str, str]], params: SamplingParams, tag: Any):
        super().__init__(decoder.inbox, tag, "endpoint-request")
        chunks = stream_request(decoder.http, decoder.engine, messages, params, self.cancelled)
        self._chunks = with_stop_sequences(chunks, StopText(params.stop), 0)

    def _run(self) -> None:
        try:
            for chunk in self._chunks:
                if self.cancelled.is_set():
                    break
                self._inbox.put((self, chunk))
        except Exception as exc:  # whatever else the stream raised fails this request alone
            if not self.cancelled.is_set():
                log.exception("Endpoint request failed")
                self._inbox.put((self, Failure(f"The endpoint request failed: {exc}", protocol.ENGINE_ERROR)))
        finally:
            self._chunks.close()  # leaves the HTTP stream's `with`: the connection closes


class EndpointDecoder(ThreadedDecoder[EndpointRow]):
    """Requests to one endpoint, each streaming on its own thread (see the module's docstring)."""

    def __init__(self, engine: EndpointEngine, connections: int = 64):
        super().__init__()
        self.engine = engine
        self.http = engine.client(connections)

    def join(self, messages: Sequence[Any], params: SamplingParams, tag: Any = None) -> tuple[EndpointRow, list[Chunk]]:
        return self.start(EndpointRow(self, list(messages), params, tag))
