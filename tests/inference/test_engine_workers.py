"""Workers of the llamacpp and openai engines: real `python -m inference.worker` processes
on real Redis, serving jobs in our protocol like a transformers worker.

llama.cpp serves the packaged SmolLM2 Q4_1 GGUF as shipped; the openai engine streams
from tests/inference/faulty_endpoint.py (a real HTTP server in this process).
"""

from __future__ import annotations

import time

import pytest

from inference import protocol
from inference.protocol import Keys, ModelSpec, SamplingParams
from inference.sources import PACKAGED_SMOLLM2, resolve_source

from .faulty_endpoint import FaultyServer
from .workers import serve_worker

pytestmark = pytest.mark.slow

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=32)
REPEAT = [{"role": "user", "content": "Repeat this sentence twice: the quick brown fox jumps over the lazy dog."}]
# A prompt whose answer quotes it: n-gram drafts come from it.
COPY = [{"role": "user", "content": "Copy this list exactly:\n1. apples and pears\n2. bread and butter\n"
         "3. salt and pepper\n4. fish and chips\n5. tea and biscuits"}]


def llamacpp_spec(**overrides) -> str:
    return ModelSpec(slug="smollm2-llamacpp", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1],
                     engine="llamacpp", **overrides).to_json()


@pytest.fixture(scope="module")
def llama_worker(redis_url, tmp_path_factory):
    with serve_worker(llamacpp_spec(), redis_url, tmp_path_factory.mktemp("llamacpp")) as served:
        yield served


@pytest.fixture(scope="module")
def faulty():
    with FaultyServer() as server:
        yield server


def test_llamacpp_worker_reports_its_file_and_memory(llama_worker):
    status = llama_worker.status()
    weights = resolve_source(*PACKAGED_SMOLLM2).stat().st_size
    assert status["state"] == protocol.W_READY and int(status["weight_bytes"]) == weights
    # Resident memory holds at least the weights llama.cpp read (as shipped, 4-bit: ~92 MB).
    assert float(status["memory_mb"]) > weights / 2**20
    assert int(status["context_length"]) > 0


def test_llamacpp_worker_streams_a_job_in_our_protocol(llama_worker):
    job = llama_worker.push(params=GREEDY, messages=REPEAT)
    events = llama_worker.events(job)
    kinds = [e["type"] for e in events]
    assert kinds[0] == protocol.STARTED and kinds[-1] == protocol.DONE and protocol.TOKEN in kinds
    assert events[0]["prompt_tokens"] is None  # llama.cpp tokenises: the count comes with the end
    done = events[-1]
    streamed = "".join(e["text"] for e in events if e["type"] == protocol.TOKEN)
    assert done["text"] == streamed and "quick brown fox" in streamed
    metrics = done["metrics"]
    assert metrics["prompt_tokens"] > 10 and 0 < metrics["generated_tokens"] <= 32
    assert metrics["ttft_s"] > 0 and metrics["decode_tokens_per_s"] > 0 and metrics["itl_p95_s"] is not None


def test_llamacpp_worker_cancels_one_job_and_keeps_the_other(llama_worker):
    long = SamplingParams(temperature=0.0, max_new_tokens=1500)
    doomed, kept = llama_worker.push(params=long), llama_worker.push(params=GREEDY, messages=REPEAT)
    llama_worker.events(doomed, until={protocol.TOKEN})
    llama_worker.client.set(llama_worker.keys.cancel(doomed.generation_id), "1")
    asked = time.time()
    cancelled = llama_worker.events(doomed)[-1]
    assert cancelled["type"] == protocol.CANCELLED and cancelled["t"] - asked < 1.0
    assert llama_worker.events(kept)[-1]["type"] == protocol.DONE
    llama_worker.wait_idle()


def test_llamacpp_speculative_reports_acceptance(redis_url, tmp_path):
    with serve_worker(llamacpp_spec(kind="speculative"), redis_url, tmp_path) as served:
        job = served.push(params=SamplingParams(temperature=0.0, max_new_tokens=80), messages=COPY)
        metrics = served.events(job)[-1]["metrics"]
    assert 0 < metrics["spec_acceptance_rate"] <= 1


def test_llamacpp_speculative_with_a_draft_file(redis_url, tmp_path):
    # The same file as its own draft: a draft of the same tokenizer, whose greedy proposals
    # the target accepts nearly always (no smaller SmolLM2 GGUF ships with the machine).
    spec = llamacpp_spec(kind="speculative", draft_source=PACKAGED_SMOLLM2[0], draft_gguf_file=PACKAGED_SMOLLM2[1])
    with serve_worker(spec, redis_url, tmp_path) as served:
        assert int(served.status()["weight_bytes"]) == 2 * resolve_source(*PACKAGED_SMOLLM2).stat().st_size
        job = served.push(params=SamplingParams(temperature=0.0, max_new_tokens=48), messages=REPEAT)
        events = served.events(job)
    assert events[-1]["type"] == protocol.DONE and events[-1]["metrics"]["spec_acceptance_rate"] > 0.5


def openai_spec(faulty, model: str, **overrides) -> str:
    return ModelSpec(slug=f"endpoint-{model}", engine="openai", base_url=faulty.base_url, remote_model=model,
                     **overrides).to_json()


def test_openai_worker_streams_from_the_endpoint_with_its_key(faulty, redis_url, tmp_path):
    env = {"ARENA_ENDPOINT_KEY_TEAM": "sk-team-secret"}
    spec = openai_spec(faulty, "ok", api_key_env="ARENA_ENDPOINT_KEY_TEAM")
    with serve_worker(spec, redis_url, tmp_path, env) as served:
        assert float(served.status()["memory_mb"]) == 0  # nothing held here
        done = served.events(served.push())[-1]
        assert done["type"] == protocol.DONE and done["text"] == "Hello there"
        assert faulty.requests[-1] == ("ok", "Bearer sk-team-secret")
    assert "sk-team-secret" not in served.worker.log_text()


def test_openai_worker_cancel_hangs_up_on_the_endpoint(faulty, redis_url, tmp_path):
    with serve_worker(openai_spec(faulty, "slow"), redis_url, tmp_path) as served:
        job = served.push(params=SamplingParams(max_new_tokens=500))
        served.events(job, until={protocol.TOKEN})
        served.client.set(served.keys.cancel(job.generation_id), "1")
        asked = time.time()
        last = served.events(job)[-1]
        assert last["type"] == protocol.CANCELLED and last["t"] - asked < 1.0
        assert last["text"].startswith(" t0")
        deadline = time.monotonic() + 5
        while "slow" not in faulty.hangups and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "slow" in faulty.hangups


def test_openai_worker_fails_a_job_with_the_endpoints_reason(faulty, redis_url, tmp_path):
    with serve_worker(openai_spec(faulty, "rate-limited-long"), redis_url, tmp_path) as served:
        failed = served.events(served.push())[-1]
        assert failed["type"] == protocol.FAILED and failed["code"] == protocol.BUSY
        assert "retry in 120 s" in failed["reason"]
        assert served.worker.proc.poll() is None and served.status()["state"] == protocol.W_READY


def test_openai_worker_without_its_key_variable_fails_to_load(faulty, start_worker, redis_prefix, redis_client):
    spec = openai_spec(faulty, "ok", api_key_env="ARENA_ENDPOINT_KEY_TEST_UNSET")
    worker = start_worker(spec, redis_prefix)
    assert worker.proc.wait(timeout=60) == 3
    status = redis_client.hgetall(Keys(redis_prefix).worker(worker.worker_id))
    assert status["state"] == protocol.W_FAILED
    assert "The environment variable ARENA_ENDPOINT_KEY_TEST_UNSET" in status["error"]
    assert "is not set" in status["error"]


def test_openai_worker_reads_no_variable_outside_the_key_prefix(faulty, start_worker, redis_prefix, redis_client):
    """An entry saved before the prefix was the rule names HOME: the worker sends none of it anywhere."""
    asked_before = len(faulty.requests)  # the server is the module's, shared with the tests above
    worker = start_worker(openai_spec(faulty, "ok", api_key_env="HOME"), redis_prefix)
    assert worker.proc.wait(timeout=60) == 3
    status = redis_client.hgetall(Keys(redis_prefix).worker(worker.worker_id))
    assert status["state"] == protocol.W_FAILED
    assert "The key variable HOME is not read" in status["error"] and "ARENA_ENDPOINT_KEY_<NAME>" in status["error"]
    assert len(faulty.requests) == asked_before
