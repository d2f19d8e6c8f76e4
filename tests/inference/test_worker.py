"""The worker process. Real: `python -m inference.worker` subprocesses, real Redis,
signals and exit codes; the model is the tiny random-weight Llama saved to disk with
SmolLM2's tokenizer, loaded by the worker through the same `load()` as production.

Job-level tests share one worker (starting one costs seconds); lifecycle tests
(load failure, SIGTERM, SIGKILL) start their own.
"""

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from inference import protocol
from inference.chunks import TokenChunk
from inference.engine import Engine
from inference.protocol import Job, Keys, ModelSpec, SamplingParams
from inference.worker import JOB_WAIT_S

from .workers import LONG, REPO_ROOT, USER, push, read_events, serve_tiny_worker, tiny_spec, wait_until


@pytest.fixture(scope="module")
def served(tiny_model_dir, redis_url, tmp_path_factory):
    with serve_tiny_worker(tiny_model_dir, redis_url, tmp_path_factory.mktemp("served-worker")) as served:
        yield served


def test_ready_worker_describes_itself(served, tiny_model_dir):
    status = served.status()
    assert status["state"] == protocol.W_READY and status["slug"] == "tiny"
    assert int(status["pid"]) == served.worker.proc.pid
    assert int(status["context_length"]) == 4096
    assert int(status["weight_bytes"]) > 0 and float(status["load_s"]) > 0
    assert float(status["started_at"]) <= float(status["ready_at"])
    assert status["decode"] == "eager (no CUDA graphs on cpu)"  # how it decodes, for the status page


def test_heartbeat_is_refreshed(served):
    key = served.keys.worker_heartbeat(served.id)
    first = served.client.get(key)
    assert first is not None
    assert 0 < served.client.ttl(key) <= protocol.HEARTBEAT_TTL_S
    wait_until(lambda: served.client.get(key) != first, 3 * protocol.HEARTBEAT_INTERVAL_S, "heartbeat not refreshed")


def test_job_streams_started_tokens_then_done(served, tokenizer, tiny_model):
    served_before = int(served.status()["served"])
    job = served.push(params=SamplingParams(temperature=0.0, max_new_tokens=12))
    events = served.events(job)
    kinds = [e["type"] for e in events]
    assert kinds == [protocol.STARTED] + [protocol.TOKEN] * 12 + [protocol.DONE]

    engine = Engine(tokenizer, tiny_model)  # the same weights, in this process
    prompt = engine.encode(USER)
    expected = [c.text_delta for c in engine.stream(prompt, job.params) if isinstance(c, TokenChunk)]
    started, tokens, done = events[0], events[1:-1], events[-1]
    assert started["prompt_tokens"] == len(prompt) and started["queue_s"] >= 0
    assert [t["n"] for t in tokens] == list(range(1, 13))
    assert [t["text"] for t in tokens] == expected
    assert done["text"] == "".join(expected) and done["finish_reason"] == "length"
    metrics = done["metrics"]
    assert metrics["arrival_time"] == job.enqueued_at
    assert metrics["generated_tokens"] == 12 and metrics["prompt_tokens"] == len(prompt)
    assert metrics["ttft_s"] > 0 and metrics["decode_tokens_per_s"] > 0

    ttl = served.client.ttl(served.keys.stream(job.generation_id))
    assert 0 < ttl <= protocol.STREAM_TTL_S
    served.wait_idle()
    assert int(served.status()["served"]) == served_before + 1


def test_cancel_mid_stream_ends_within_a_second(served):
    job = served.push(params=LONG)
    served.events(job, until={protocol.TOKEN})
    served.client.set(served.keys.cancel(job.generation_id), "1")
    cancelled_at = time.time()
    events = served.events(job)
    last = events[-1]
    assert last["type"] == protocol.CANCELLED
    assert last["t"] - cancelled_at < 1.0
    streamed = "".join(e["text"] for e in events if e["type"] == protocol.TOKEN)
    assert last["text"] == streamed
    assert 0 < last["metrics"]["generated_tokens"] < LONG.max_new_tokens
    served.wait_idle()


def test_job_cancelled_before_it_starts(served):
    generation_id = uuid.uuid4().hex
    served.client.set(served.keys.cancel(generation_id), "1")
    job = Job(generation_id=generation_id, messages=USER)
    served.client.rpush(served.keys.worker_jobs(served.id), job.to_json())
    events = served.events(job)
    assert [e["type"] for e in events] == [protocol.CANCELLED]
    assert events[0]["text"] == "" and events[0]["metrics"]["generated_tokens"] == 0


def test_prompt_too_long_fails_without_starting(served):
    job = served.push(messages=[{"role": "user", "content": "word " * 5000}])
    events = served.events(job)
    assert [e["type"] for e in events] == [protocol.FAILED]
    assert events[0]["code"] == protocol.PROMPT_TOO_LONG
    assert "4096 tokens" in events[0]["reason"]


def test_malformed_jobs_do_not_stop_the_worker(served):
    jobs_key = served.keys.worker_jobs(served.id)
    served.client.rpush(jobs_key, "not json at all")
    served.client.rpush(jobs_key, b"\xff\xfe not UTF-8")
    served.client.rpush(jobs_key, json.dumps(["a", "list"]))
    served.client.rpush(jobs_key, json.dumps({"generation_id": "bad-shape", "messages": "hello"}))
    served.client.rpush(jobs_key, json.dumps({"generation_id": "bad-params", "messages": [], "params": {"top_p": 7}}))
    served.client.rpush(jobs_key, json.dumps({"generation_id": "no-messages"}))
    for generation_id, words in [
        ("bad-shape", "messages must be a list"),
        ("bad-params", "top_p: must be between"),
        ("no-messages", "the field 'messages' is missing"),
    ]:
        events = read_events(served.client, served.keys, generation_id)
        assert [e["type"] for e in events] == [protocol.FAILED]
        assert events[0]["code"] == protocol.BAD_JOB and words in events[0]["reason"]

    good = served.push()
    assert served.events(good)[-1]["type"] == protocol.DONE
    assert served.worker.proc.poll() is None


def test_missing_model_fails_with_a_readable_error(start_worker, redis_prefix, redis_client):
    keys = Keys(redis_prefix)
    worker = start_worker(ModelSpec(slug="ghost", source="/nonexistent/model").to_json(), redis_prefix)
    assert worker.proc.wait(timeout=60) == 3
    status = redis_client.hgetall(keys.worker(worker.worker_id))
    assert status["state"] == protocol.W_FAILED and status["slug"] == "ghost"
    assert status["error"] == (
        "Model failed to load: No model at '/nonexistent/model': the path does not exist "
        "and no Hugging Face cache entry is named so."
    )
    assert not redis_client.exists(keys.worker_heartbeat(worker.worker_id))


def start_streaming(start_worker, tiny_model_dir, redis_prefix, redis_client):
    """A worker in the middle of a long generation: (worker, keys, job)."""
    keys = Keys(redis_prefix)
    worker = start_worker(tiny_spec(tiny_model_dir), redis_prefix)
    worker.wait_for_state(redis_client, keys.worker(worker.worker_id), {protocol.W_READY})
    job = push(redis_client, keys, worker.worker_id, params=LONG)
    read_events(redis_client, keys, job.generation_id, until={protocol.TOKEN})
    return worker, keys, job


def test_sigterm_ends_the_current_job_as_failed_and_exits_cleanly(start_worker, tiny_model_dir, redis_prefix,
                                                                  redis_client):
    worker, keys, job = start_streaming(start_worker, tiny_model_dir, redis_prefix, redis_client)
    worker.proc.send_signal(signal.SIGTERM)
    last = read_events(redis_client, keys, job.generation_id)[-1]
    assert last["type"] == protocol.FAILED and "worker was stopped" in last["reason"]
    assert worker.proc.wait(timeout=10) == 0
    assert redis_client.hget(keys.worker(worker.worker_id), "state") == protocol.W_STOPPED
    assert not redis_client.exists(keys.worker_heartbeat(worker.worker_id))


def test_sigkill_leaves_the_heartbeat_to_expire(start_worker, tiny_model_dir, redis_prefix, redis_client):
    worker, keys, job = start_streaming(start_worker, tiny_model_dir, redis_prefix, redis_client)
    heartbeat = keys.worker_heartbeat(worker.worker_id)
    assert redis_client.exists(heartbeat)
    os.kill(worker.proc.pid, signal.SIGKILL)
    assert worker.proc.wait(timeout=10) == -signal.SIGKILL
    wait_until(
        lambda: not redis_client.exists(heartbeat), protocol.HEARTBEAT_TTL_S + 2, "heartbeat outlived the worker"
    )
    # Nobody wrote a terminal event: telling users is the orchestrator's job, and the
    # stream still expires on its own.
    entries = redis_client.xrange(keys.stream(job.generation_id))
    assert not {protocol.parse_event(f)["type"] for _, f in entries} & protocol.TERMINAL_EVENTS
    assert 0 < redis_client.ttl(keys.stream(job.generation_id)) <= protocol.STREAM_TTL_S


def test_worker_dies_with_its_parent(tiny_model_dir, redis_url, redis_prefix, redis_client, tmp_path):
    """PR_SET_PDEATHSIG: SIGKILL the worker's parent and the (idle) worker stops cleanly."""
    keys = Keys(redis_prefix)
    argv = [sys.executable, "-m", "inference.worker", "--worker-id", "orphan", "--spec", tiny_spec(tiny_model_dir),
            "--redis-url", redis_url, "--prefix", redis_prefix]
    launcher = (
        "import os, subprocess, time\n"
        f"subprocess.Popen({argv!r}, env={{**os.environ, 'ARENA_WORKER_THREADS': '1'}})\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", launcher], cwd=REPO_ROOT)
    worker_pid = None
    try:
        wait_until(lambda: redis_client.hget(keys.worker("orphan"), "state") == protocol.W_READY, 60, "never ready")
        worker_pid = int(redis_client.hget(keys.worker("orphan"), "pid"))
        parent.kill()
        parent.wait(timeout=10)
        wait_until(
            lambda: redis_client.hget(keys.worker("orphan"), "state") == protocol.W_STOPPED,
            3 * JOB_WAIT_S + 2,
            "the orphaned worker did not stop",
        )
        wait_until(lambda: not _alive(worker_pid), 5, "the orphaned worker process is still running")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(timeout=10)
        if worker_pid and _alive(worker_pid):
            os.kill(worker_pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie awaiting reaping by init counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False
