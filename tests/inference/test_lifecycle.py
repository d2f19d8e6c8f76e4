"""One job lifecycle, whichever way the job is served.

Every case runs against each serving path of `inference.scheduler.build_scheduler`:
- "batched": a plain Engine, so a BatchedDecoder (continuous batching);
- "one_at_a_time": an Engine that decodes in its own `stream`, so a StreamDecoder;
- "speculative": the prompt-lookup SpeculativeEngine, the engine production serves
  one at a time (its greedy output is the target's own, so the texts match too).
Same events, same endings, same TTL: the paths can no longer disagree.

Real: the scheduler's thread, Redis (this test's own prefix), transformers' cache.
The model is the tiny random-weight Llama with SmolLM2's tokenizer
(tests/tiny_models.py): its text is noise, which the lifecycle never reads.
"""

import copy
import threading
import time
import uuid

import pytest

from inference import protocol
from inference.chunks import Finish, TokenChunk
from inference.decoding import StreamDecoder
from inference.engine import Engine
from inference.lifecycle import request_metrics
from inference.protocol import Job, Keys, SamplingParams
from inference.scheduler import build_scheduler
from inference.speculative import SpeculativeEngine
from inference.transport import WORKER_STOPPING, WorkerStatus

from .workers import read_events, wait_until

USER = [{"role": "user", "content": "Say something."}]
SHORT = SamplingParams(temperature=0.0, max_new_tokens=8)
LONG = SamplingParams(temperature=0.0, max_new_tokens=2048)  # seconds on the tiny model: time to interrupt it


class OwnLoopEngine(Engine):
    """A plain engine with a `stream` of its own, so it cannot batch and runs one job at a time."""

    def stream(self, input_ids, params, should_cancel=lambda: False):
        yield from super().stream(input_ids, params, should_cancel)


ENGINES = {"batched": Engine, "one_at_a_time": OwnLoopEngine, "speculative": SpeculativeEngine}


@pytest.fixture
def keys(redis_prefix):
    return Keys(redis_prefix)


@pytest.fixture
def status(redis_client, keys):
    status = WorkerStatus(redis_client, keys, "w1")
    status.ready(load_s=0.1, context_length=4096, weight_bytes=1, memory_mb=1.0)
    return status


class Serving:
    """A started scheduler, fed in-process the way the worker's main thread feeds it."""

    def __init__(self, engine, client, keys, status, max_batch):
        self.client, self.keys, self.status = client, keys, status
        self.stopping = threading.Event()
        self.scheduler = build_scheduler(engine, client, keys, status, self.stopping.is_set,
                                         max_batch=max_batch, max_queue=4)
        self.scheduler.start()

    def submit(self, params=SHORT, messages=USER, *, cancelled=False, waited_s=0.0) -> Job:
        job = Job(uuid.uuid4().hex, messages, params, enqueued_at=time.time() - waited_s)
        if cancelled:
            self.cancel(job)
        self.scheduler.submit(job)
        return job

    def cancel(self, job):
        self.client.set(self.keys.cancel(job.generation_id), "1")

    def events(self, job, **kwargs):
        return read_events(self.client, self.keys, job.generation_id, **kwargs)

    def ended(self, job):
        """The job's events once it ended; every ending gives the stream its TTL."""
        events = self.events(job)
        stream = self.keys.stream(job.generation_id)
        # The TTL follows the terminal event (one command later), so a reader may get there first.
        wait_until(lambda: 0 < self.client.ttl(stream) <= protocol.STREAM_TTL_S, 2, "the stream never got its TTL")
        return events

    def worker(self) -> dict:
        return self.client.hgetall(self.keys.worker("w1"))

    def wait_idle(self):
        wait_until(lambda: self.worker().get("in_flight") == "0", 5, f"still busy: {self.worker()}")

    def stop(self):
        self.stopping.set()
        self.scheduler.shutdown()


@pytest.fixture(params=list(ENGINES))
def path(request):
    return request.param


@pytest.fixture
def serve(path, tokenizer, tiny_model, redis_client, keys, status):
    """serve(model=None, tok=None, max_batch=4): a Serving over this path's engine."""
    started = []

    def start(model=None, tok=None, max_batch=4):
        engine = ENGINES[path](tok or tokenizer, model or tiny_model)
        started.append(Serving(engine, redis_client, keys, status, max_batch))
        return started[-1]

    yield start
    for serving in started:
        serving.stop()


def test_each_path_serves_the_engine_it_should(serve, path):
    decoder = serve().scheduler.decoder
    assert isinstance(decoder, StreamDecoder) == (path != "batched")


def test_a_job_streams_then_ends_done(serve, tokenizer, tiny_model):
    serving = serve()
    served_before = int(serving.worker()["served"])
    job = serving.submit(waited_s=0.25)
    events = serving.ended(job)
    plain = Engine(tokenizer, tiny_model)
    prompt = plain.encode(USER)
    expected = [c.text_delta for c in plain.stream(prompt, SHORT) if isinstance(c, TokenChunk)]
    assert [e["type"] for e in events] == [protocol.STARTED] + [protocol.TOKEN] * 8 + [protocol.DONE]
    started, tokens, done = events[0], events[1:-1], events[-1]
    assert started["prompt_tokens"] == len(prompt) and started["queue_s"] >= 0.25
    assert [(t["text"], t["n"]) for t in tokens] == [(text, n) for n, text in enumerate(expected, 1)]
    assert [t["at"] for t in tokens] == [len("".join(expected[:i])) for i in range(len(expected))]
    assert done["text"] == "".join(expected) and done["finish_reason"] == "length"
    metrics = done["metrics"]
    assert metrics["time_in_queue"] == pytest.approx(started["queue_s"])
    assert metrics["generated_tokens"] == 8 and metrics["prompt_tokens"] == len(prompt)
    assert metrics["ttft_s"] > 0 and metrics["itl_mean_s"] > 0
    serving.wait_idle()
    assert int(serving.worker()["served"]) == served_before + 1


def test_cancelled_before_it_starts(serve):
    serving = serve()
    events = serving.ended(serving.submit(cancelled=True))
    assert [e["type"] for e in events] == [protocol.CANCELLED]
    assert events[0]["text"] == "" and events[0]["metrics"]["generated_tokens"] == 0
    serving.wait_idle()


def test_cancelled_mid_stream_keeps_the_streamed_text(serve):
    serving = serve()
    job = serving.submit(LONG)
    serving.events(job, until={protocol.TOKEN})
    serving.cancel(job)
    events = serving.ended(job)
    last = events[-1]
    assert last["type"] == protocol.CANCELLED
    assert last["text"] == "".join(e["text"] for e in events if e["type"] == protocol.TOKEN)
    assert 0 < last["metrics"]["generated_tokens"] < LONG.max_new_tokens
    serving.wait_idle()


def test_stop_sequence_cuts_the_text(serve, tokenizer, tiny_model):
    """The stop string is taken from the middle of the job's own greedy text."""
    plain = Engine(tokenizer, tiny_model)
    greedy = SamplingParams(temperature=0.0, max_new_tokens=16)
    full_text = "".join(c.text_delta for c in plain.stream(plain.encode(USER), greedy))
    stop = full_text[len(full_text) // 2 : len(full_text) // 2 + 3]
    serving = serve()
    events = serving.ended(serving.submit(SamplingParams(temperature=0.0, max_new_tokens=16, stop=(stop, "\u2603"))))
    done = events[-1]
    assert done["type"] == protocol.DONE and done["finish_reason"] == "stop_sequence"
    assert done["text"] == full_text[: full_text.index(stop)]
    tokens = [e for e in events if e["type"] == protocol.TOKEN]
    assert "".join(e["text"] for e in tokens) == done["text"]
    assert all(done["text"][t["at"]:].startswith(t["text"]) for t in tokens)  # the held-back text's too
    assert done["metrics"]["generated_tokens"] < 16


def test_prompt_too_long_fails_without_starting(serve):
    serving = serve()
    events = serving.ended(serving.submit(messages=[{"role": "user", "content": "word " * 5000}]))
    assert [(e["type"], e["code"]) for e in events] == [(protocol.FAILED, protocol.PROMPT_TOO_LONG)]
    assert "4096 tokens" in events[0]["reason"]
    serving.wait_idle()


def test_conversation_the_template_rejects_is_a_bad_job(serve, tokenizer):
    strict = copy.deepcopy(tokenizer)
    strict.chat_template = (
        "{% if messages[0]['role'] != 'user' %}{{ raise_exception('Conversation must start with a user turn') }}"
        "{% endif %}{% for m in messages %}{{ m['content'] }}{% endfor %}"
    )
    serving = serve(tok=strict)
    events = serving.ended(serving.submit(messages=[{"role": "assistant", "content": "Hi"}]))
    assert [(e["type"], e["code"]) for e in events] == [(protocol.FAILED, protocol.BAD_JOB)]
    assert "Conversation must start with a user turn" in events[0]["reason"]


def test_a_stopping_worker_fails_what_nobody_cancelled(serve):
    """One job running, two queued behind it: all end, FAILED (worker_died, with the reason)
    unless a cancel key asked for the end, which stays CANCELLED as the worker stops."""
    serving = serve(max_batch=1)
    running = serving.submit(LONG)
    serving.events(running, until={protocol.TOKEN})
    asked, queued = serving.submit(LONG), serving.submit(LONG)
    serving.cancel(asked)
    serving.stop()
    last = serving.ended(running)[-1]
    assert (last["type"], last["code"], last["reason"]) == (protocol.FAILED, protocol.WORKER_DIED, WORKER_STOPPING)
    assert [e["type"] for e in serving.ended(asked)] == [protocol.CANCELLED]
    assert [(e["type"], e["code"]) for e in serving.ended(queued)] == [(protocol.FAILED, protocol.WORKER_DIED)]
    assert serving.worker()["in_flight"] == "0"


def test_a_job_arriving_as_the_worker_stops_still_ends(serve):
    serving = serve()
    serving.stop()
    job = serving.submit(LONG)  # the loop is gone: shutdown ends what came after it
    serving.scheduler.shutdown()
    assert [(e["type"], e["code"]) for e in serving.ended(job)] == [(protocol.FAILED, protocol.WORKER_DIED)]


def test_a_model_error_fails_the_job_and_serving_goes_on(serve, tokenizer, tiny_model):
    broken = copy.deepcopy(tiny_model)
    calls = []

    def forward_then_fail(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("simulated kernel failure\nwith a second line")
        return type(tiny_model).forward(broken, *args, **kwargs)

    broken.forward = forward_then_fail
    serving = serve(model=broken)
    events = serving.ended(serving.submit(SamplingParams(temperature=0.0, max_new_tokens=64)))
    kinds = [e["type"] for e in events]
    assert kinds[0] == protocol.STARTED and protocol.TOKEN in kinds
    assert set(kinds[1:-1]) == {protocol.TOKEN} and kinds[-1] == protocol.FAILED
    assert events[-1]["code"] == protocol.ENGINE_ERROR
    assert events[-1]["reason"] == "The model failed while generating: simulated kernel failure"
    after = serving.ended(serving.submit())  # the fourth call on: the model works again
    assert after[-1]["type"] == protocol.DONE
    serving.wait_idle()


def test_request_metrics_add_inter_token_latency_and_acceptance():
    job = Job(generation_id="g", messages=[], enqueued_at=100.0)
    finish = Finish("length", 4, 7, 101.0, 107.0, proposed_tokens=8, accepted_tokens=6)
    metrics = request_metrics(job, 100.5, finish, [101.0, 102.0, 104.0, 107.0])
    assert metrics["itl_mean_s"] == pytest.approx(2.0) and metrics["itl_p95_s"] == pytest.approx(3.0)
    assert metrics["time_in_queue"] == pytest.approx(0.5) and metrics["spec_acceptance_rate"] == 0.75
    plain = request_metrics(job, 100.5, Finish("length", 1, 7, 101.0, 101.0), [101.0])
    assert plain["itl_mean_s"] is None and "spec_acceptance_rate" not in plain
