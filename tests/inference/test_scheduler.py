"""SingleJobScheduler in-process, against real Redis, for the failure paths that a
healthy worker subprocess cannot be made to take: a chat template that rejects the
conversation and a model that raises mid-forward (injected by wrapping `forward`).
The model is the tiny random Llama; the tokenizer is SmolLM2's.
"""

import copy
import uuid

import pytest

from inference import protocol
from inference.engine import Engine
from inference.protocol import Job, Keys, SamplingParams
from inference.scheduler import SingleJobScheduler
from inference.transport import WorkerStatus

USER = [{"role": "user", "content": "Hello"}]


@pytest.fixture
def keys(redis_prefix):
    return Keys(redis_prefix)


@pytest.fixture
def status(redis_client, keys):
    status = WorkerStatus(redis_client, keys, "w1")
    status.ready(load_s=0.1, context_length=4096, weight_bytes=1, memory_mb=1.0)
    return status


def run_job(engine, redis_client, keys, status, messages=USER, stopping=lambda: False):
    job = Job(
        generation_id=uuid.uuid4().hex, messages=messages, params=SamplingParams(temperature=0.0, max_new_tokens=4)
    )
    SingleJobScheduler(engine, redis_client, keys, status, stopping).run(job, scheduled_at=job.enqueued_at + 0.25)
    stream = keys.stream(job.generation_id)
    assert 0 < redis_client.ttl(stream) <= protocol.STREAM_TTL_S  # every outcome expires
    return [protocol.parse_event(fields) for _, fields in redis_client.xrange(stream)]


def test_a_job_runs_to_done_and_updates_the_status(tokenizer, tiny_model, redis_client, keys, status):
    events = run_job(Engine(tokenizer, tiny_model), redis_client, keys, status)
    assert [e["type"] for e in events] == ["started"] + ["token"] * 4 + ["done"]
    assert events[0]["queue_s"] == pytest.approx(0.25)
    assert events[-1]["metrics"]["time_in_queue"] == pytest.approx(0.25)
    fields = redis_client.hgetall(keys.worker("w1"))
    assert fields["in_flight"] == "0" and fields["served"] == "1"


def test_stopping_worker_fails_instead_of_starting(tokenizer, tiny_model, redis_client, keys, status):
    """Nobody cancelled it: the worker is going away, and its viewers are told so."""
    events = run_job(Engine(tokenizer, tiny_model), redis_client, keys, status, stopping=lambda: True)
    assert [e["type"] for e in events] == ["failed"]
    assert events[0]["code"] == protocol.WORKER_DIED and "worker was stopped" in events[0]["reason"]


def test_conversation_the_template_rejects_is_a_bad_job(tokenizer, tiny_model, redis_client, keys, status):
    strict = copy.deepcopy(tokenizer)
    strict.chat_template = (
        "{% if messages[0]['role'] != 'user' %}{{ raise_exception('Conversation must start with a user turn') }}"
        "{% endif %}{% for m in messages %}{{ m['content'] }}{% endfor %}"
    )
    events = run_job(
        Engine(strict, tiny_model), redis_client, keys, status, messages=[{"role": "assistant", "content": "Hi"}]
    )
    assert [e["type"] for e in events] == ["failed"]
    assert events[0]["code"] == protocol.BAD_JOB
    assert "Conversation must start with a user turn" in events[0]["reason"]


def test_model_error_is_reported_as_engine_error(tokenizer, tiny_model, redis_client, keys, status):
    broken = copy.deepcopy(tiny_model)
    calls = []

    def forward_then_fail(*args, **kwargs):
        calls.append(1)
        if len(calls) > 2:
            raise RuntimeError("simulated kernel failure\nwith a second line")
        return type(tiny_model).forward(broken, *args, **kwargs)

    broken.forward = forward_then_fail
    events = run_job(Engine(tokenizer, broken), redis_client, keys, status)
    assert [e["type"] for e in events] == ["started", "token", "token", "failed"]
    assert events[-1]["code"] == protocol.ENGINE_ERROR
    assert events[-1]["reason"] == "The model failed while generating: simulated kernel failure"
    assert redis_client.hget(keys.worker("w1"), "in_flight") == "0"


def test_stop_sequence_cuts_the_text_for_engines_that_run_alone(tokenizer, tiny_model, redis_client, keys, status):
    """SingleJobScheduler (speculative engines run through it) applies stop sequences itself."""
    engine = Engine(tokenizer, tiny_model)
    full = [
        c.text_delta for c in engine.stream(engine.encode(USER), SamplingParams(temperature=0.0, max_new_tokens=12))
    ]
    full_text = "".join(full)
    stop = full_text[len(full_text) // 2 : len(full_text) // 2 + 3]
    job = Job(
        generation_id=uuid.uuid4().hex,
        messages=USER,
        params=SamplingParams(temperature=0.0, max_new_tokens=12, stop=(stop,)),
    )
    SingleJobScheduler(engine, redis_client, keys, status, lambda: False).run(job, scheduled_at=job.enqueued_at)
    events = [protocol.parse_event(f) for _, f in redis_client.xrange(keys.stream(job.generation_id))]
    done = events[-1]
    assert done["type"] == "done" and done["finish_reason"] == "stop"
    assert done["text"] == full_text[: full_text.index(stop)]
    assert "".join(e["text"] for e in events if e["type"] == "token") == done["text"]
    assert done["metrics"]["generated_tokens"] < 12 and done["metrics"]["itl_mean_s"] > 0


def test_only_the_plain_engine_batches(tokenizer, tiny_model):
    class OwnLoop(Engine):
        def stream(self, input_ids, params, should_cancel=lambda: False):
            yield from super().stream(input_ids, params, should_cancel)

    assert Engine(tokenizer, tiny_model).supports_batching
    assert not OwnLoop(tokenizer, tiny_model).supports_batching
