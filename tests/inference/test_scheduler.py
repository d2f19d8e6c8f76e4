"""`inference.scheduler`: which decoder serves an engine, the one-at-a-time hold-back,
and continuous batching through a real worker.

Real: the tiny random-weight Llama with SmolLM2's tokenizer (tests/tiny_models.py),
Redis, and `python -m inference.worker` subprocesses. The lifecycle of a single job
(cancel, stop sequences, failures, a stopping worker) is in test_lifecycle.py, run
against every serving path.
"""

import signal
import threading
import time
import uuid

import pytest

from inference import protocol
from inference.batched_decoder import BatchedDecoder
from inference.chunks import FINISH_STOP_SEQUENCE, TokenChunk
from inference.decoding import StreamDecoder
from inference.engine import Engine
from inference.protocol import Job, Keys, SamplingParams
from inference.scheduler import build_scheduler
from inference.speculative import SpeculativeEngine
from inference.transport import WorkerStatus

from .workers import Served, read_events, serve_tiny_worker, tiny_spec

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=16)


@pytest.fixture(scope="module")
def engine(tokenizer, tiny_model):
    return Engine(tokenizer, tiny_model)


def alone(engine, prompt, params) -> list[int]:
    return [c.token_id for c in engine.stream(prompt, params) if isinstance(c, TokenChunk)]


def test_only_the_plain_engine_batches(tokenizer, tiny_model):
    class OwnLoop(Engine):
        def stream(self, input_ids, params, should_cancel=lambda: False):
            yield from super().stream(input_ids, params, should_cancel)

    assert Engine(tokenizer, tiny_model).supports_batching
    assert not OwnLoop(tokenizer, tiny_model).supports_batching
    assert not SpeculativeEngine(tokenizer, tiny_model).supports_batching


def test_each_engine_gets_its_decoder(engine, tokenizer, tiny_model, redis_client, redis_prefix):
    args = (redis_client, Keys(redis_prefix), WorkerStatus(redis_client, Keys(redis_prefix), "w1"), lambda: True)
    batched = build_scheduler(engine, *args, max_batch=3, max_queue=5)
    assert isinstance(batched.decoder, BatchedDecoder)
    assert (batched.max_batch, batched.max_queue) == (3, 5)
    alone_ = build_scheduler(SpeculativeEngine(tokenizer, tiny_model), *args, max_batch=3, max_queue=5)
    assert isinstance(alone_.decoder, StreamDecoder)
    assert (alone_.max_batch, alone_.max_queue) == (1, 0)
    # how each decodes, for the status page: the CPU runs no graphs; the speculative engine says how it verifies
    assert batched.decode_kind == "eager (no CUDA graphs on cpu)"
    assert alone_.decode_kind == "eager (verify passes over a DynamicCache: no CUDA graphs on cpu)"


def test_gpu_workers_compile_and_capture_their_steps_unless_told_not_to():
    from inference import config

    defaults = config.current({})
    assert defaults.cuda_graphs and defaults.compile_decode
    told = config.current({"ARENA_CUDA_GRAPHS": "0", "ARENA_COMPILE_DECODE": "0"})
    assert not told.cuda_graphs and not told.compile_decode


def test_one_at_a_time_holds_the_worker_back_until_the_job_ends(tokenizer, tiny_model, redis_client, redis_prefix):
    """The next job stays in the worker's Redis list (the orchestrator counts it there)."""
    keys = Keys(redis_prefix)
    stopping = threading.Event()
    scheduler = build_scheduler(SpeculativeEngine(tokenizer, tiny_model), redis_client, keys,
                                WorkerStatus(redis_client, keys, "w1"), stopping.is_set)
    scheduler.start()
    try:
        assert scheduler.wait_for_room(0)
        job = Job(uuid.uuid4().hex, USER, LONG)
        scheduler.submit(job)
        read_events(redis_client, keys, job.generation_id, until={protocol.TOKEN})
        assert not scheduler.wait_for_room(0.2)
        redis_client.set(keys.cancel(job.generation_id), "1")
        assert scheduler.wait_for_room(5)
        assert read_events(redis_client, keys, job.generation_id)[-1]["type"] == protocol.CANCELLED
    finally:
        stopping.set()
        scheduler.shutdown()


# Through a real worker: at most 2 running and 1 taken ahead; a 4th waits in the worker's Redis list.
LONG = SamplingParams(temperature=0.0, max_new_tokens=2048)
USER = [{"role": "user", "content": "Say something."}]


@pytest.fixture(scope="module")
def batching_worker(tiny_model_dir, redis_url, tmp_path_factory):
    env = {"ARENA_WORKER_MAX_BATCH": "2", "ARENA_WORKER_MAX_QUEUE": "1"}
    with serve_tiny_worker(tiny_model_dir, redis_url, tmp_path_factory.mktemp("batching-worker"), env) as served:
        yield served


def cancel(served, job):
    served.client.set(served.keys.cancel(job.generation_id), "1")


def test_a_full_worker_never_refuses_and_cancels_are_per_request(batching_worker):
    """A job beyond the batch and the queue waits in the worker's Redis list (the fair line, not the
    worker, decides how much waits): never refused as busy, taken once there is room."""
    served = batching_worker
    running = []
    for _ in range(2):  # one at a time: a job still in the 1-slot queue would make the next one wait in Redis
        running.append(served.push(params=LONG))
        served.events(running[-1], until={protocol.TOKEN})
    waiting = served.push(params=LONG)
    stream = served.keys.stream(waiting.generation_id)
    wait_for(
        lambda: served.status().get("in_flight") == "3",
        lambda: f"the third job never queued: {served.status()} {served.client.xrange(stream)}",
    )
    beyond = served.push(params=LONG)
    time.sleep(0.5)
    assert served.client.xlen(served.keys.stream(beyond.generation_id)) == 0  # not refused: nothing said yet
    assert served.client.llen(served.keys.worker_jobs(served.worker.worker_id)) == 1  # it waits in Redis

    cancel(served, waiting)  # cancelled while queued: never started
    assert [e["type"] for e in served.events(waiting)] == [protocol.CANCELLED]
    wait_for(lambda: served.client.llen(served.keys.worker_jobs(served.worker.worker_id)) == 0,
             "the job waiting in Redis was not taken once the queue had room")
    cancel(served, beyond)
    assert served.events(beyond)[-1]["type"] == protocol.CANCELLED
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
    assert done["type"] == protocol.DONE and done["finish_reason"] == FINISH_STOP_SEQUENCE
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


def test_each_answer_says_how_many_others_shared_the_worker_while_it_decoded(batching_worker):
    """Issue 35: a rate measured beside other answers is not the model's speed alone; the metrics say
    how many shared the worker (the batch beside it), and 0 for one that ran alone."""
    served = batching_worker
    solo = served.events(served.push(params=GREEDY))[-1]["metrics"]
    assert (solo["shared_with_max"], solo["shared_with_mean"]) == (0, 0.0)
    first = served.push(params=SamplingParams(temperature=0.0, max_new_tokens=64))
    served.events(first, until={protocol.TOKEN})  # decoding: the second joins its batch
    second = served.push(params=GREEDY)
    shared = served.events(second)[-1]["metrics"]
    neighbour = served.events(first)[-1]["metrics"]
    assert shared["shared_with_max"] == 1 and neighbour["shared_with_max"] == 1
    assert 0 < neighbour["shared_with_mean"] < 1  # it decoded alone before the second came, and after it ended
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


def test_a_speculative_worker_takes_the_next_job_only_when_the_last_ends(start_worker, tiny_model_dir, redis_prefix,
                                                                         redis_client):
    """One job at a time in a real worker (prompt lookup): the second waits in the Redis list while
    the first streams, then runs; a SIGTERM then ends the running one as failed."""
    keys = Keys(redis_prefix)
    worker = start_worker(tiny_spec(tiny_model_dir, kind="speculative"), redis_prefix)
    worker.wait_for_state(redis_client, keys.worker(worker.worker_id), {protocol.W_READY})
    served = Served(worker, keys, redis_client)
    first = served.push(params=LONG)
    served.events(first, until={protocol.TOKEN})
    second = served.push(params=SamplingParams(temperature=0.0, max_new_tokens=8))
    streamed = redis_client.xlen(keys.stream(first.generation_id))
    wait_for(lambda: redis_client.xlen(keys.stream(first.generation_id)) > streamed + 5, "the first job stalled")
    assert redis_client.llen(keys.worker_jobs(worker.worker_id)) == 1 and served.status()["in_flight"] == "1"
    cancel(served, first)
    assert served.events(first)[-1]["type"] == protocol.CANCELLED
    done = served.events(second)
    assert [e["type"] for e in done] == [protocol.STARTED] + [protocol.TOKEN] * 8 + [protocol.DONE]
    third = served.push(params=LONG)
    served.events(third, until={protocol.TOKEN})
    worker.proc.send_signal(signal.SIGTERM)
    last = served.events(third)[-1]
    assert (last["type"], last["code"]) == (protocol.FAILED, protocol.WORKER_DIED)
    assert worker.proc.wait(timeout=10) == 0
