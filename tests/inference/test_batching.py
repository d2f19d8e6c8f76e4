"""Continuous batching: `BatchedDecoder` in-process, `BatchScheduler` in a real worker.

Real: the decode loop over the tiny random-weight Llama (fp32, 2 layers) with
SmolLM2's tokenizer, transformers' DynamicCache, Redis, and `python -m
inference.worker` subprocesses. The identity tests compare each row of a batch
with the same request run alone through `Engine.stream`, token for token: left
padding is masked out exactly (its attention weight is 0) and positions count
real tokens only, so a row computes what it computes alone; on this model and
these prompts no fp32 rounding difference flips an argmax.
"""

import signal
import time

import pytest

from inference import protocol
from inference.batching import BatchedDecoder, busy_reason
from inference.engine import FINISH_CANCELLED, FINISH_LENGTH, FINISH_STOP, Engine, Finish, TokenChunk
from inference.protocol import Job, Keys, SamplingParams
from inference.scheduler import StopText, request_metrics

from .test_worker import Served, read_events, serve_tiny_worker, tiny_spec

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=16)
TOPICS = ["Hi", "Tell me a long story about dragons, castles and the sea, please.", "What is 2+2?", "Name a colour."]


@pytest.fixture(scope="module")
def engine(tokenizer, tiny_model):
    return Engine(tokenizer, tiny_model)


@pytest.fixture(scope="module")
def prompts(engine):
    return [engine.encode([{"role": "user", "content": topic}]) for topic in TOPICS]


def alone(engine, prompt, params) -> list[int]:
    return [c.token_id for c in engine.stream(prompt, params) if isinstance(c, TokenChunk)]


class Collector:
    """Drives a decoder and files every chunk under its row's tag."""

    def __init__(self, decoder: BatchedDecoder):
        self.decoder = decoder
        self.tokens: dict = {}
        self.finishes: dict = {}

    def join(self, tag, prompt, params):
        row, chunks = self.decoder.join(prompt, params, tag)
        self._file(row, chunks)
        return row

    def step(self, times=1):
        for _ in range(times):
            for row, chunk in self.decoder.step():
                self._file(row, [chunk])

    def drain(self):
        while len(self.decoder):
            self.step()

    def _file(self, row, chunks):
        for chunk in chunks:
            if isinstance(chunk, Finish):
                self.finishes[row.tag] = chunk
            else:
                self.tokens.setdefault(row.tag, []).append(chunk.token_id)


def test_every_row_of_a_batch_decodes_as_it_would_alone(engine, prompts):
    """Four prompts of different lengths joined together, each greedy.

    Seeded sampling is not compared: on this random model the distribution is
    nearly flat over 49k tokens, so a last-bit difference between a batched and a
    lone matmul moves a draw to a neighbouring token within about ten steps.
    """
    params = [GREEDY, GREEDY, SamplingParams(temperature=0.0, max_new_tokens=12), GREEDY]
    batch = Collector(BatchedDecoder(engine))
    for tag, (prompt, p) in enumerate(zip(prompts, params, strict=True)):
        batch.join(tag, prompt, p)
    assert len(batch.decoder) == 4
    batch.drain()
    for tag, (prompt, p) in enumerate(zip(prompts, params, strict=True)):
        assert batch.tokens[tag] == alone(engine, prompt, p), f"row {tag}"
        assert batch.finishes[tag].reason == FINISH_LENGTH
        assert batch.finishes[tag].generated_tokens == p.max_new_tokens


def test_seeded_sampling_draws_as_engine_stream_does(engine, prompts):
    """A lone row (no padding, so the same logits): the batched draws replay Engine.stream's."""
    for params in (
        SamplingParams(temperature=0.9, top_p=0.9, seed=7, max_new_tokens=12),
        SamplingParams(temperature=1.3, top_p=1.0, seed=8, max_new_tokens=12),
    ):
        batch = Collector(BatchedDecoder(engine))
        batch.join("row", prompts[1], params)
        batch.drain()
        assert batch.tokens["row"] == alone(engine, prompts[1], params)


def test_a_request_joins_a_running_batch(engine, prompts):
    batch = Collector(BatchedDecoder(engine))
    batch.join("first", prompts[1], GREEDY)
    batch.step(5)
    batch.join("late", prompts[0], GREEDY)  # shorter prompt, later start: both sides get padded
    assert len(batch.decoder) == 2 and "first" not in batch.finishes
    batch.step(3)
    batch.join("later", prompts[2], GREEDY)
    batch.drain()
    assert batch.tokens["first"] == alone(engine, prompts[1], GREEDY)
    assert batch.tokens["late"] == alone(engine, prompts[0], GREEDY)
    assert batch.tokens["later"] == alone(engine, prompts[2], GREEDY)


def test_a_finished_row_leaves_while_the_others_continue(engine, prompts):
    short = SamplingParams(temperature=0.0, max_new_tokens=3)
    batch = Collector(BatchedDecoder(engine))
    batch.join("long", prompts[0], GREEDY)
    batch.join("short", prompts[1], short)  # the longest prompt: its leaving frees the padding
    batch.step(2)
    assert batch.finishes["short"].reason == FINISH_LENGTH and len(batch.decoder) == 1
    long_row = batch.decoder.rows[0]
    assert batch.decoder.mask.shape[1] == long_row.length  # the shared left padding was trimmed
    assert batch.decoder.cache.layers[0].keys.shape[2] == long_row.length
    batch.drain()
    assert batch.tokens["long"] == alone(engine, prompts[0], GREEDY)
    assert batch.tokens["short"] == alone(engine, prompts[1], short)


def test_cancelling_one_row_leaves_the_others_untouched(engine, prompts):
    batch = Collector(BatchedDecoder(engine))
    rows = [batch.join(tag, prompts[tag], GREEDY) for tag in range(3)]
    batch.step(4)
    [(row, finish)] = batch.decoder.cancel([rows[1]])
    assert row is rows[1] and finish.reason == FINISH_CANCELLED and finish.generated_tokens == 5
    assert [r.tag for r in batch.decoder.rows] == [0, 2]
    batch.drain()
    assert batch.tokens[0] == alone(engine, prompts[0], GREEDY)
    assert batch.tokens[2] == alone(engine, prompts[2], GREEDY)


def test_a_row_stops_at_its_stop_sequence(engine, tokenizer, prompts):
    """The stop string is taken from the middle of the row's own greedy text."""
    full_text = tokenizer.decode(alone(engine, prompts[0], GREEDY), skip_special_tokens=True)
    stop = full_text[len(full_text) // 2 : len(full_text) // 2 + 3]
    params = SamplingParams(temperature=0.0, max_new_tokens=16, stop=(stop, "\u2603 never"))
    decoder = BatchedDecoder(engine)
    chunks = decoder.join(prompts[0], params, "row")[1]
    while len(decoder):
        chunks.extend(chunk for _, chunk in decoder.step())
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason == FINISH_STOP and finish.generated_tokens < 16
    assert "".join(c.text_delta for c in chunks) == full_text[: full_text.index(stop)]


@pytest.mark.parametrize(
    ("deltas", "stops", "streamed", "stopped"),
    [
        (["Hello wor", "ld. Bye"], ["world"], ["Hello ", ""], True),  # split across deltas
        (["ab", "c", "d"], ["xyz"], ["ab", "c", "d"], False),  # nothing to hold back
        (["one ##", "# two"], ["###", "two"], ["one ", ""], True),  # the held "##" became a stop
        (["a END b STOP"], ["STOP", "END"], ["a "], True),  # the earliest stop wins
        (["say S", "TOP", "x"], ["STOP"], ["say ", ""], True),
        (["x S", "Tx"], ["STOP"], ["x ", "STx"], False),  # a false start is released
    ],
)
def test_stop_text_holds_back_only_what_may_start_a_stop(deltas, stops, streamed, stopped):
    stop_text = StopText(stops)
    out = [stop_text.feed(d) for d in deltas]
    assert out[: len(streamed)] == streamed and all(o == "" for o in out[len(streamed) :])
    assert stop_text.stopped is stopped


def test_request_metrics_add_inter_token_latency_and_acceptance():
    job = Job(generation_id="g", messages=[], enqueued_at=100.0)
    finish = Finish("length", 4, 7, 101.0, 107.0, proposed_tokens=8, accepted_tokens=6)
    metrics = request_metrics(job, 100.5, finish, [101.0, 102.0, 104.0, 107.0])
    assert metrics["itl_mean_s"] == pytest.approx(2.0) and metrics["itl_p95_s"] == pytest.approx(3.0)
    assert metrics["time_in_queue"] == pytest.approx(0.5) and metrics["spec_acceptance_rate"] == 0.75
    plain = request_metrics(job, 100.5, Finish("length", 1, 7, 101.0, 101.0), [101.0])
    assert plain["itl_mean_s"] is None and "spec_acceptance_rate" not in plain


# Through a real worker: at most 2 running and 1 waiting, so a 4th concurrent job is refused.
LONG = SamplingParams(temperature=0.0, max_new_tokens=2048)
USER = [{"role": "user", "content": "Say something."}]


@pytest.fixture(scope="module")
def batching_worker(tiny_model_dir, redis_url, tmp_path_factory):
    env = {"ARENA_WORKER_MAX_BATCH": "2", "ARENA_WORKER_MAX_QUEUE": "1"}
    with serve_tiny_worker(tiny_model_dir, redis_url, tmp_path_factory.mktemp("batching-worker"), env) as served:
        yield served


def cancel(served, job):
    served.client.set(served.keys.cancel(job.generation_id), "1")


def test_full_queue_refuses_at_once_and_cancels_are_per_request(batching_worker):
    served = batching_worker
    running = []
    for _ in range(2):  # one at a time: a job still in the 1-slot queue would make the next one busy
        running.append(served.push(params=LONG))
        served.events(running[-1], until={protocol.TOKEN})
    waiting = served.push(params=LONG)
    wait_for(
        lambda: served.status().get("in_flight") == "3",
        lambda: (
            f"the third job never queued: {served.status()} {served.client.xrange(served.keys.stream(waiting.generation_id))}"
        ),
    )
    refused_at = time.time()
    refused = served.push(params=LONG)
    [event] = served.events(refused)
    assert event["type"] == protocol.FAILED and event["code"] == protocol.BUSY
    assert event["reason"] == busy_reason(1) and event["t"] - refused_at < 1.0

    cancel(served, waiting)  # cancelled while queued: never started
    assert [e["type"] for e in served.events(waiting)] == [protocol.CANCELLED]
    cancel(served, running[0])
    first = served.events(running[0])
    assert first[-1]["type"] == protocol.CANCELLED
    assert first[-1]["text"] == "".join(e["text"] for e in first if e["type"] == protocol.TOKEN)
    wait_for(lambda: served.status().get("in_flight") == "1", "the cancelled jobs still count as in flight")
    second_so_far = read_events(served.client, served.keys, running[1].generation_id, until={protocol.TOKEN})
    assert second_so_far[-1]["n"] > 0  # the other running job goes on
    cancel(served, running[1])
    assert served.events(running[1])[-1]["type"] == protocol.CANCELLED
    served.wait_idle()


def test_a_job_that_cannot_run_fails_alone(batching_worker):
    served = batching_worker
    running = served.push(params=LONG)
    served.events(running, until={protocol.TOKEN})
    too_long = served.push(messages=[{"role": "user", "content": "word " * 5000}])
    assert [(e["type"], e.get("code")) for e in served.events(too_long)] == [
        (protocol.FAILED, protocol.PROMPT_TOO_LONG)
    ]
    tokens_so_far = len(served.client.xrange(served.keys.stream(running.generation_id)))
    wait_for(
        lambda: served.client.xlen(served.keys.stream(running.generation_id)) > tokens_so_far + 5,
        "the running job stalled",
    )
    cancel(served, running)
    assert served.events(running)[-1]["type"] == protocol.CANCELLED
    served.wait_idle()


def test_stop_sequence_and_metrics_through_the_worker(batching_worker, engine, tokenizer):
    served = batching_worker
    full_text = tokenizer.decode(alone(engine, engine.encode(USER), GREEDY), skip_special_tokens=True)
    stop = full_text[len(full_text) // 2 : len(full_text) // 2 + 3]
    neighbour_params = SamplingParams(temperature=0.0, max_new_tokens=64)
    neighbour = served.push(params=neighbour_params)
    served.events(neighbour, until={protocol.TOKEN})  # running, so the stopping job joins it in the batch
    job = served.push(params=SamplingParams(temperature=0.0, max_new_tokens=16, stop=[stop]))
    events = served.events(job)
    done = events[-1]
    assert done["type"] == protocol.DONE and done["finish_reason"] == FINISH_STOP
    assert done["text"] == full_text[: full_text.index(stop)]
    assert done["text"] == "".join(e["text"] for e in events if e["type"] == protocol.TOKEN)
    other = served.events(neighbour)[-1]
    neighbour_text = tokenizer.decode(alone(engine, engine.encode(USER), neighbour_params), skip_special_tokens=True)
    assert other["type"] == protocol.DONE and other["text"] == neighbour_text
    metrics = other["metrics"]
    assert metrics["generated_tokens"] == 64 and metrics["time_in_queue"] >= 0
    assert 0 < metrics["itl_mean_s"] < 1 and 0 < metrics["itl_p95_s"] < 1
    assert "spec_acceptance_rate" not in metrics
    served.wait_idle()


def wait_for(predicate, message, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(message() if callable(message) else message)


def test_sigterm_ends_running_and_queued_requests_as_failed(start_worker, tiny_model_dir, redis_prefix, redis_client):
    """Nobody asked to cancel them: the worker is going away, so they failed, with the reason."""
    keys = Keys(redis_prefix)
    env = {"ARENA_WORKER_MAX_BATCH": "1", "ARENA_WORKER_MAX_QUEUE": "4"}
    worker = start_worker(tiny_spec(tiny_model_dir), redis_prefix, env=env)
    worker.wait_for_state(redis_client, keys.worker(worker.worker_id), {protocol.W_READY})
    served = Served(worker, keys, redis_client)
    running = served.push(params=LONG)
    served.events(running, until={protocol.TOKEN})
    queued = served.push(params=LONG)
    wait_for(lambda: served.status().get("in_flight") == "2", "the second job never queued")
    worker.proc.send_signal(signal.SIGTERM)
    last = served.events(running)[-1]
    assert last["type"] == protocol.FAILED and last["code"] == protocol.WORKER_DIED
    assert [e["type"] for e in served.events(queued)] == [protocol.FAILED]
    assert worker.proc.wait(timeout=10) == 0
    assert served.status()["state"] == protocol.W_STOPPED and served.status()["in_flight"] == "0"
