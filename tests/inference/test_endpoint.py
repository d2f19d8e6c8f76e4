"""`inference.endpoint`: streaming from OpenAI-compatible servers, and every way they fail.

Real servers on 127.0.0.1, no mock of an endpoint: llama.cpp's own HTTP server (xllamacpp
in this process, as `python -m inference.llamacpp` serves it) on the packaged SmolLM2 Q4_1 GGUF,
and tests/inference/faulty_endpoint.py, an HTTP server written to fail one way per
model name (wrong key, 429, a cut stream, garbage). The app's own /v1 as an endpoint
is tested end to end in tests/live/test_engines.py.
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import httpx
import pytest

from inference import llamacpp, protocol
from inference.chunks import (
    FINISH_CANCELLED,
    FINISH_LENGTH,
    FINISH_STOP,
    FINISH_STOP_SEQUENCE,
    Failure,
    Finish,
    TokenChunk,
)
from inference.decoding import StopText, with_stop_sequences
from inference.endpoint import EndpointDecoder, EndpointEngine, plain_text, retry_after, stream_request
from inference.protocol import ModelSpec, SamplingParams
from inference.sources import PACKAGED_SMOLLM2, resolve_source

from .faulty_endpoint import ECHOED_KEY_PREFIX, FaultyServer

pytestmark = pytest.mark.slow

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=24)
HELLO = [{"role": "user", "content": "Name three colours."}]


@pytest.fixture(scope="module")
def llama():
    """llama.cpp's HTTP server on SmolLM2's Q4_1 file, 4 slots, 2 threads, and the engine reading it."""
    import xllamacpp

    llamacpp.wait_passively()
    path = resolve_source(*PACKAGED_SMOLLM2)
    spec = ModelSpec(slug="smollm2-llamacpp", source=str(path), engine="llamacpp")
    key = "llama-test-key"
    server = xllamacpp.Server(llamacpp.server_params(xllamacpp, spec, str(path), parallel=4, threads=2, api_key=key))
    yield SimpleNamespace(server=server, engine=EndpointEngine(base_url=f"{server.listening_address}/v1",
                                                               model=path.name, api_key=key))
    del server


@pytest.fixture(scope="module")
def faulty():
    with FaultyServer(silence_s=3.0) as server:
        yield server


def collect(engine: EndpointEngine, messages=HELLO, params=GREEDY) -> tuple[str, list, Finish | Failure]:
    """A request's chunks as its row reads them: the stream, cut at the stop sequences here (not by the server)."""
    with engine.client(4) as client:
        chunks = list(with_stop_sequences(stream_request(client, engine, messages, params, threading.Event()),
                                          StopText(params.stop), 0))
    tokens = [c for c in chunks if isinstance(c, TokenChunk)]
    end = chunks[-1]
    assert isinstance(end, (Finish, Failure)) and all(isinstance(c, TokenChunk) for c in chunks[:-1])
    return "".join(c.text_delta for c in tokens) + getattr(end, "text_delta", ""), tokens, end


def direct(llama, path: str, body: dict) -> dict:
    response = httpx.post(llama.engine.base_url + path, json={"model": llama.engine.model, **body},
                          headers=llama.engine.headers(), timeout=60)
    response.raise_for_status()
    return response.json()


# ---------------------------------------------------------------- llama.cpp's server


def test_stream_matches_the_servers_own_answer(llama):
    text, tokens, finish = collect(llama.engine)
    expected = direct(llama, "/chat/completions", {"messages": HELLO, "max_tokens": 24, "temperature": 0})
    assert text == expected["choices"][0]["message"]["content"] and text
    assert isinstance(finish, Finish) and finish.reason in (FINISH_STOP, FINISH_LENGTH)
    assert finish.generated_tokens == expected["usage"]["completion_tokens"]
    assert finish.prompt_tokens == expected["usage"]["prompt_tokens"] > 5
    assert finish.first_token_time <= finish.last_token_time and len(tokens) >= finish.generated_tokens - 2


def test_a_base_model_gets_plain_text_not_a_chat_template(llama):
    base = EndpointEngine(**{**llama.engine.__dict__, "base": True})
    messages = [{"role": "user", "content": "The capital of France is"}]
    text, _, finish = collect(base, messages, SamplingParams(temperature=0.0, max_new_tokens=8))
    expected = direct(llama, "/completions", {"prompt": plain_text(messages), "max_tokens": 8, "temperature": 0})
    assert text == expected["choices"][0]["text"] and finish.reason == FINISH_LENGTH


def test_stop_sequences_cut_the_text(llama):
    """Cut here, not by the server (which would say only "stop", as at the end of an answer): the Finish
    says it was a stop sequence, and closing the stream stops the server's work on it."""
    full, _, _ = collect(llama.engine)
    stop = full.strip().split()[1]
    params = SamplingParams(temperature=0.0, max_new_tokens=24, stop=(stop,))
    assert "stop" not in llama.engine.request(HELLO, params)[1]
    text, _, finish = collect(llama.engine, params=params)
    assert stop not in text and full.startswith(text) and finish.reason == FINISH_STOP_SEQUENCE
    assert finish.generated_tokens < 24


def test_concurrent_requests_each_get_their_own_answer(llama):
    words = ("apple", "river", "candle", "falcon")
    decoder = EndpointDecoder(llama.engine)
    rows = {decoder.join([{"role": "user", "content": f"Write the word {w} three times."}], GREEDY, tag=w)[0]: w
            for w in words}
    texts, ends = dict.fromkeys(words, ""), {}
    deadline = time.monotonic() + 60
    while len(ends) < len(words) and time.monotonic() < deadline:
        for row, chunk in decoder.step():
            if isinstance(chunk, TokenChunk):
                texts[rows[row]] += chunk.text_delta
            else:
                ends[rows[row]] = chunk
    assert all(isinstance(e, Finish) for e in ends.values()) and len(ends) == len(words) and len(decoder) == 0
    # Each row got its own prompt's answer, and no other's. (Not token for token what it gets
    # alone: llama.cpp's batched kernels round differently from a batch of one.)
    for word, text in texts.items():
        assert word in text.lower() and not any(other in text.lower() for other in words if other != word), texts


def test_cancel_ends_the_row_at_once_and_frees_the_server(llama):
    decoder = EndpointDecoder(llama.engine)
    row, _ = decoder.join(HELLO, SamplingParams(temperature=0.0, max_new_tokens=2000))
    got = []
    while not got:
        got = [c for r, c in decoder.step() if isinstance(c, TokenChunk)]
    [(cancelled_row, finish)] = decoder.cancel([row])
    assert cancelled_row is row and finish.reason == FINISH_CANCELLED and finish.generated_tokens >= 1
    assert len(decoder) == 0 and decoder.step() == []  # nothing more comes out for it
    row.thread.join(timeout=5)
    assert not row.thread.is_alive()  # it closed its stream
    # llama.cpp notices the closed stream when it next writes to it (its next token): the slot
    # is free within moments, not in the same instant (asked at once, it failed 1 run in 3).
    deadline = time.monotonic() + 5
    while any(slot.get("is_processing") for slot in slots(llama)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(slot.get("is_processing") for slot in slots(llama))


def slots(llama) -> list[dict]:
    return httpx.get(llama.engine.base_url.removesuffix("/v1") + "/slots", headers=llama.engine.headers()).json()


def test_a_wrong_key_is_refused_by_llamacpp(llama):
    wrong = EndpointEngine(**{**llama.engine.__dict__, "api_key": "not-the-key", "api_key_env": "LLAMA_KEY"})
    _, _, failure = collect(wrong)
    assert isinstance(failure, Failure)
    assert "refused the API key in the environment variable LLAMA_KEY (HTTP 401)" in failure.reason


# ---------------------------------------------------------------- a server that fails on purpose


def faulty_engine(faulty, model: str, **kw) -> EndpointEngine:
    return EndpointEngine(base_url=faulty.base_url, model=model, **kw)


@pytest.mark.parametrize(("model", "code", "words"), [
    ("forbidden", protocol.ENGINE_ERROR, "refused the API key (HTTP 403): This key may not use this model."),
    ("no-such-model", protocol.ENGINE_ERROR, "does not serve the model 'no-such-model' (HTTP 404)"),
    ("rate-limited-long", protocol.BUSY, "rate limiting requests (HTTP 429); it asks to retry in 120 s"),
    ("server-error", protocol.ENGINE_ERROR, "HTTP 500: The engine crashed with a traceback."),
    ("context", protocol.PROMPT_TOO_LONG, "does not fit this model's context (HTTP 400)"),
    ("cut", protocol.ENGINE_ERROR, "stopped before the answer was finished"),
    ("garbage", protocol.ENGINE_ERROR, 'not a completion stream: a line that is not JSON ("<html>Bad gateway'),
    ("wrong-shape", protocol.ENGINE_ERROR, "not a completion stream: a chunk without the expected fields"),
    ("error-event", protocol.ENGINE_ERROR, "failed while generating: model overloaded"),
])
def test_each_failure_gets_a_clear_reason(faulty, model, code, words):
    _, _, failure = collect(faulty_engine(faulty, model))
    assert isinstance(failure, Failure) and failure.code == code
    assert words in failure.reason, failure.reason


def test_text_before_a_cut_is_streamed(faulty):
    text, _, failure = collect(faulty_engine(faulty, "cut"))
    assert text == "Half an answer" and isinstance(failure, Failure)


def test_a_finished_stream_without_done_still_counts(faulty):
    text, _, finish = collect(faulty_engine(faulty, "no-done"))
    assert text == "Complete" and isinstance(finish, Finish) and finish.reason == FINISH_LENGTH


def test_a_short_retry_after_is_waited_out(faulty):
    started = time.monotonic()
    text, _, finish = collect(faulty_engine(faulty, "rate-limited-once"))
    assert text == "Hello there" and isinstance(finish, Finish)
    assert time.monotonic() - started >= 1.0  # it waited the second it was asked to
    assert [m for m, _ in faulty.requests].count("rate-limited-once") == 2


def test_the_key_is_sent_but_never_shown(faulty):
    secret = "sk-test-0123456789abcdef0123456789abcdef"
    _, _, failure = collect(faulty_engine(faulty, "wrong-key", api_key=secret, api_key_env="TEAM_KEY"))
    assert (faulty.requests[-1][1]) == f"Bearer {secret}"
    assert secret not in failure.reason and secret[:12] not in failure.reason
    assert ECHOED_KEY_PREFIX + "[key]" in failure.reason and "TEAM_KEY" in failure.reason
    assert secret not in repr(faulty_engine(faulty, "x", api_key=secret))


def test_silence_times_out(faulty):
    _, _, failure = collect(faulty_engine(faulty, "silent", read_timeout_s=0.5))
    assert failure.code == protocol.TIMEOUT and "stopped answering for 0.5 s" in failure.reason


def test_a_refused_connection_is_named():
    engine = EndpointEngine(base_url="http://127.0.0.1:9/v1", model="m")
    _, _, failure = collect(engine)
    assert isinstance(failure, Failure) and "Could not reach the endpoint at http://127.0.0.1:9/v1" in failure.reason
    assert "connection refused" in failure.reason


def test_cancelling_hangs_up_on_the_server(faulty):
    decoder = EndpointDecoder(faulty_engine(faulty, "slow"))
    row, _ = decoder.join(HELLO, GREEDY)
    while not decoder.step():
        pass
    decoder.cancel([row])
    row.thread.join(timeout=5)
    assert not row.thread.is_alive()
    deadline = time.monotonic() + 5
    while "slow" not in faulty.hangups and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "slow" in faulty.hangups  # the server saw the connection go


def test_retry_after_values():
    assert retry_after("3") == 3 and retry_after("0.5") == 0.5
    assert retry_after(None) is None and retry_after("Wed, 21 Oct 2015 07:28:00 GMT") is None
    assert retry_after("-1") is None and retry_after("1e9") is None
