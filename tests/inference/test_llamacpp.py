"""The llamacpp engine: llama.cpp called in this process (`inference.llamacpp` starts it,
`inference.llamacpp_decoder` serves jobs from its callback), on the packaged SmolLM2 Q4_1 GGUF.

Each answer is checked against llama.cpp's own whole (non-streamed) answer to the same body;
its slots are read through the HTTP listener xllamacpp opens beside (nothing else reads it).
Worker processes with this engine (cancel in our protocol, both speculative kinds) are in
test_engine_workers.py; constrained answers on more prompts in test_structured_smollm2.py.
"""

from __future__ import annotations

import time

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
from inference.decoding import WARM_UP_MESSAGES
from inference.llamacpp_decoder import LlamaCppDecoder, LlamaCppEngine
from inference.protocol import ModelSpec, SamplingParams, plain_text
from inference.sources import PACKAGED_SMOLLM2
from inference.structured import answer_valid

pytestmark = pytest.mark.slow

CONTEXT = 1024
GREEDY = SamplingParams(temperature=0.0, max_new_tokens=24)
HELLO = [{"role": "user", "content": "Name three colours."}]
WORDS = ("apple", "river", "candle", "falcon", "garden", "banana", "pencil", "rocket",
         "silver", "tiger", "violin", "winter", "yellow", "bottle", "castle", "forest")


def spec(**overrides) -> ModelSpec:
    return ModelSpec(slug="smollm2-llamacpp", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1],
                     engine="llamacpp", context_length=CONTEXT, **overrides)


@pytest.fixture(scope="module")
def llama():
    """16 slots (the worker's default batch), 2 threads."""
    server = llamacpp.start(spec(), parallel=16, threads=2)
    yield server
    del server.server


@pytest.fixture(scope="module")
def one_slot():
    server = llamacpp.start(spec(), parallel=1, threads=2)
    yield server
    del server.server


Jobs = dict[str, tuple[list[dict[str, str]], SamplingParams]]


def run(decoder: LlamaCppDecoder, jobs: Jobs) -> dict[str, tuple[str, Finish | Failure]]:
    """Each job's text and end, all joined at once and stepped as the scheduler steps them."""
    rows = {decoder.join(messages, params, tag=name)[0]: name for name, (messages, params) in jobs.items()}
    texts, ends = dict.fromkeys(jobs, ""), {}
    deadline = time.monotonic() + 120
    while len(ends) < len(jobs) and time.monotonic() < deadline:
        for row, chunk in decoder.step():
            if isinstance(chunk, TokenChunk):
                texts[rows[row]] += chunk.text_delta
            else:
                assert rows[row] not in ends  # one end each
                ends[rows[row]] = chunk
                texts[rows[row]] += getattr(chunk, "text_delta", "")
    assert len(ends) == len(jobs) and len(decoder) == 0
    return {name: (texts[name], ends[name]) for name in jobs}


def one(engine: LlamaCppEngine, messages=HELLO, params=GREEDY) -> tuple[str, Finish | Failure]:
    return run(LlamaCppDecoder(engine), {"only": (messages, params)})["only"]


def whole(engine: LlamaCppEngine, messages, params) -> dict:
    """llama.cpp's own answer to the same body, not streamed."""
    route, body = engine.request(messages, params)
    body.pop("stream_options")
    return engine.handler(route)({**body, "stream": False})


def slots(server: llamacpp.LlamaCppServer) -> list[dict]:
    return httpx.get(f"{server.server.listening_address}/slots",
                     headers={"Authorization": f"Bearer {server.listener_key}"}).json()


def test_the_answer_is_llamacpps_own(llama):
    text, finish = one(llama.engine)
    expected = whole(llama.engine, HELLO, GREEDY)
    assert text == expected["choices"][0]["message"]["content"] and text
    assert isinstance(finish, Finish) and finish.reason in (FINISH_STOP, FINISH_LENGTH)
    assert finish.generated_tokens == expected["usage"]["completion_tokens"]
    assert finish.prompt_tokens == expected["usage"]["prompt_tokens"] > 5
    assert finish.first_token_time <= finish.last_token_time


def test_a_base_model_gets_plain_text_not_a_chat_template(llama):
    base = LlamaCppEngine(llama.engine.server, llama.engine.model, base=True)
    messages = [{"role": "user", "content": "The capital of France is"}]
    params = SamplingParams(temperature=0.0, max_new_tokens=8)
    text, finish = one(base, messages, params)
    expected = whole(base, messages, params)
    assert base.request(messages, params)[1]["prompt"] == plain_text(messages)
    assert text == expected["choices"][0]["text"] and finish.reason == FINISH_LENGTH


def test_stop_sequences_cut_the_text_and_end_the_request(llama):
    full, _ = one(llama.engine)
    stop = full.strip().split()[1]
    params = SamplingParams(temperature=0.0, max_new_tokens=24, stop=(stop,))
    assert "stop" not in llama.engine.request(HELLO, params)[1]  # cut here: llama.cpp would say only "stop"
    text, finish = one(llama.engine, params=params)
    assert stop not in text and full.startswith(text) and finish.reason == FINISH_STOP_SEQUENCE
    assert finish.generated_tokens < 24


def test_sixteen_concurrent_requests_each_get_their_own_answer(llama):
    jobs = {w: ([{"role": "user", "content": f"Write the word {w} three times."}], GREEDY) for w in WORDS}
    answers = run(LlamaCppDecoder(llama.engine), jobs)
    assert all(isinstance(end, Finish) and end.generated_tokens > 0 for _, end in answers.values())
    # Each row got its own prompt's answer, and no other's. (Not token for token what it gets
    # alone: llama.cpp's batched kernels round differently from a batch of one.)
    for word, (text, _) in answers.items():
        assert word in text.lower() and not any(other in text.lower() for other in WORDS if other != word), answers


def test_a_prompt_longer_than_the_context_fails_with_the_reason_and_code_of_the_http_path(llama):
    text, failure = one(llama.engine, [{"role": "user", "content": "word " * (CONTEXT + 100)}])
    assert text == "" and isinstance(failure, Failure) and failure.code == protocol.PROMPT_TOO_LONG
    assert failure.reason.startswith("The prompt does not fit this model's context (HTTP 400): request (")
    assert f"exceeds the available context size ({CONTEXT} tokens)" in failure.reason
    assert one(llama.engine)[1].reason in (FINISH_STOP, FINISH_LENGTH)  # the next request is served


def test_json_schema_and_regex_constrain_the_answer(llama):
    schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}, "required": ["answer"],
              "additionalProperties": False}
    question = [{"role": "user", "content": "Is Paris in France? Answer in JSON."}]
    answers = run(LlamaCppDecoder(llama.engine), {
        "schema": (question, SamplingParams(temperature=0.0, max_new_tokens=32, json_schema=schema)),
        "regex": (question, SamplingParams(temperature=0.0, max_new_tokens=32, regex="(Yes|No), it is\\.")),
    })
    assert answer_valid(answers["schema"][0], json_schema=schema), answers
    assert answer_valid(answers["regex"][0], regex="(Yes|No), it is\\."), answers
    # Valid either way: greedy text in a shared batch may differ by a token from run to run, and a
    # grammar may let the model pad with whitespace to the limit after the closing brace.
    assert all(end.reason in (FINISH_STOP, FINISH_LENGTH) for _, end in answers.values())


def test_cancel_ends_the_row_at_once_and_frees_its_slot(one_slot):
    decoder = LlamaCppDecoder(one_slot.engine)
    row, _ = decoder.join(HELLO, SamplingParams(temperature=0.0, max_new_tokens=2000))
    got = []
    while not got:
        got = [c for r, c in decoder.step() if isinstance(c, TokenChunk)]
    [(cancelled_row, finish)] = decoder.cancel([row])
    assert cancelled_row is row and finish.reason == FINISH_CANCELLED and finish.generated_tokens >= 1
    assert len(decoder) == 0 and decoder.step() == []  # nothing more comes out for it
    row.thread.join(timeout=10)
    assert not row.thread.is_alive()  # llama.cpp's call returned: the callback's True ended it
    # llama.cpp cancels the task as the call returns; its loop frees the slot at its next step.
    deadline = time.monotonic() + 5
    while any(slot["is_processing"] for slot in slots(one_slot)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(slot["is_processing"] for slot in slots(one_slot))
    assert one(one_slot.engine)[1].reason in (FINISH_STOP, FINISH_LENGTH)  # the one slot serves again


def test_a_row_cancelled_after_llamacpp_answered_gets_one_end(one_slot):
    """A cancel and the row's own end may cross: the scheduler gets exactly one end per row."""
    decoder = LlamaCppDecoder(one_slot.engine)
    row, _ = decoder.join(HELLO, SamplingParams(temperature=0.0, max_new_tokens=4))
    row.thread.join(timeout=30)  # llama.cpp has answered, its end waits in the inbox
    assert [chunk.reason for _, chunk in decoder.cancel([row])] == [FINISH_CANCELLED]
    assert decoder.step() == [] and len(decoder) == 0


def test_llamacpp_has_answered_a_warm_up_before_it_is_ready(one_slot):
    """A user-sized prompt went through the one slot during the load: the same prompt again finds it
    in the slot's cache (the first user's time to first token does not pay llama.cpp's first-request
    costs; arena/generations counts the load apart)."""
    answer = whole(one_slot.engine, WARM_UP_MESSAGES, SamplingParams(temperature=0.0, max_new_tokens=1))
    assert answer["timings"]["cache_n"] > 20


def test_an_invalid_gguf_file_fails_to_load_with_a_reason(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 60)
    with pytest.raises(llamacpp.LlamaCppError, match=r"llama\.cpp could not load broken\.gguf"):
        llamacpp.start(ModelSpec(slug="b", source=str(broken), engine="llamacpp"), parallel=1, threads=1)


def test_llamacpp_refuses_what_is_not_gguf(tiny_model_dir):
    with pytest.raises(llamacpp.LlamaCppError, match="serves GGUF files"):
        llamacpp.start(ModelSpec(slug="t", source=str(tiny_model_dir), engine="llamacpp"), parallel=1, threads=1)


def test_llamacpp_params_follow_the_spec():
    import xllamacpp

    entry = ModelSpec(slug="s", source="x", engine="llamacpp", kind="speculative", context_length=4096)
    params = llamacpp.server_params(xllamacpp, entry, "/m.gguf", parallel=8, threads=3, api_key="k")
    assert (params.n_parallel, params.n_ctx, params.cpuparams.n_threads) == (8, 4096, 3)
    assert params.hostnames == ["127.0.0.1"]
    assert params.speculative.types == [xllamacpp.common_speculative_type.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
    assert params.api_keys == ["k"] and params.kv_unified and params.cont_batching


def test_the_cpu_build_has_avx2():
    assert "AVX2 = 1" in llamacpp.system_info()
