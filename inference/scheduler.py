"""Serving jobs: the `Scheduler` a worker hands its jobs to.

One implementation, `JobScheduler`, serves every engine. Its own thread takes queued
jobs into a decoder at step boundaries, steps the decoder, and writes every job's
events through the job's `JobRun` (`inference.lifecycle`), one Redis pipeline per
step, so batched and one-at-a-time serving cannot disagree on how a job ends.
`build_scheduler` picks the decoder:

- an engine that batches: a `BatchedDecoder`, up to max_batch jobs side by side and
  max_queue taken ahead to join the batch at the next step;
- llama.cpp in this process: a `LlamaCppDecoder`, each job on llama.cpp's callback, up to
  its slots;
- an OpenAI-compatible server (a managed server, a remote endpoint): an
  `EndpointDecoder`, each job on its own HTTP stream, up to the engine's concurrency;
- any other engine (speculative decoding): a `StreamDecoder`, one job at a time.

No job is ever refused as busy: one beyond what the worker holds waits in the worker's Redis
list, where the orchestrator counts it, until `wait_for_room` lets the worker take it. How much
work waits is the fair line's to decide (arena/generations/admission.py), not the worker's.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import redis

from inference import config
from inference.chunks import Chunk
from inference.decoding import Decoder, StreamDecoder
from inference.endpoint import EndpointDecoder, EndpointEngine
from inference.lifecycle import JobRun
from inference.llamacpp_decoder import LlamaCppDecoder, LlamaCppEngine
from inference.protocol import Job, Keys
from inference.transport import GenerationEvents, WorkerStatus

if TYPE_CHECKING:
    from inference.engine import Engine

log = logging.getLogger(__name__)


class Scheduler(Protocol):
    """What the worker's main thread sees: it waits for room, submits, and shuts down."""

    def start(self) -> None: ...

    def wait_for_room(self, timeout: float) -> bool:
        """True once the worker should take another job from Redis; False after `timeout`."""
        ...

    def submit(self, job: Job) -> None: ...

    @property
    def decode_kind(self) -> str: ...

    @property
    def held_mb(self) -> float | None: ...

    def shutdown(self) -> None:
        """Once `stopping()` is true: wait until every job held has ended."""
        ...


def build_scheduler(
    engine: Engine | EndpointEngine | LlamaCppEngine,
    client: redis.Redis,
    keys: Keys,
    status: WorkerStatus,
    stopping: Callable[[], bool],
    *,
    max_batch: int = 16,
    max_queue: int = 32,
) -> JobScheduler:
    """A continuous batch when the engine can batch; otherwise one job at a time."""
    if isinstance(engine, LlamaCppEngine):
        concurrency = engine.max_concurrency or max_batch
        log.info("llama.cpp in this process: up to %d requests at once, %d queued", concurrency, max_queue)
        return JobScheduler(LlamaCppDecoder(engine), client, keys, status, stopping,
                            max_batch=concurrency, max_queue=max_queue)
    if isinstance(engine, EndpointEngine):
        concurrency = engine.max_concurrency or max_batch
        log.info("Streaming from %s: up to %d requests at once, %d queued", engine.base_url, concurrency, max_queue)
        return JobScheduler(EndpointDecoder(engine), client, keys, status, stopping,
                            max_batch=concurrency, max_queue=max_queue)
    if engine.supports_batching:
        log.info("Continuous batching: up to %d running, %d queued", max_batch, max_queue)
        return JobScheduler(_batched_decoder(engine, max_batch), client, keys, status, stopping,
                            max_batch=max_batch, max_queue=max_queue)
    log.info("One job at a time (%s does not batch)", type(engine).__name__)
    return JobScheduler(StreamDecoder(engine), client, keys, status, stopping, max_batch=1, max_queue=0)


def _batched_decoder(engine: Engine, max_batch: int):
    """The continuous batch, its steps captured (and compiled) on a GPU as the settings say."""
    from inference.batched_decoder import BatchedDecoder  # torch: only for engines that batch

    settings = config.current()
    if settings.compile_decode:
        config.keep_compiled_artefacts(settings)
    return BatchedDecoder(engine, max_rows=max_batch, graphs=settings.cuda_graphs, compiled=settings.compile_decode)


class JobScheduler:
    """Runs jobs through a decoder on a thread of its own.

    The worker's main thread `submit`s jobs into a queue of at most `max_queue` beyond the
    batch; `wait_for_room` holds it back until there is room (never a refusal). `stopping()` true ends everything held:
    CANCELLED where a cancel key asked for it, FAILED (worker stopping) otherwise.
    """

    CANCEL_POLL_S = 0.05  # cancel flags are checked this often, for all jobs in one round trip
    IDLE_WAIT_S = 0.1  # how long an idle loop sleeps before looking at `stopping` again

    def __init__(
        self,
        decoder: Decoder[Any],
        client: redis.Redis,
        keys: Keys,
        status: WorkerStatus,
        stopping: Callable[[], bool],
        *,
        max_batch: int = 16,
        max_queue: int = 32,
    ):
        self.decoder = decoder
        self.client = client
        self.keys = keys
        self.status = status
        self.stopping = stopping  # true once the worker is shutting down: end everything
        self.max_batch = max(1, max_batch)
        self.max_queue = max(0, max_queue)
        self.queue: collections.deque[JobRun] = collections.deque()
        self.running: dict[Any, JobRun] = {}  # decoder row -> its job
        self._starting: JobRun | None = None  # between the queue and the decoder
        # Guards `queue`, `_starting` and in_flight writes, and wakes the loop (work) and the
        # worker's main thread (room); the loop owns the rest.
        self._lock = threading.Condition()
        self._last_cancel_poll = 0.0
        self._thread = threading.Thread(target=self._loop, name="job-scheduler", daemon=True)


    @property
    def decode_kind(self) -> str:
        """How the decoder runs its steps ("CUDA graphs: ...", "eager (...)"); "" where it has no say."""
        return getattr(self.decoder, "step_kind", "")

    @property
    def held_mb(self) -> float | None:
        """Memory the decoder measured once it allocated everything up front (a GPU batch's KV
        slots and captured graphs), or None where its memory grows with use."""
        return getattr(self.decoder, "held_mb", None)

    def start(self) -> None:
        self._thread.start()

    def wait_for_room(self, timeout: float) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: self._in_flight() < self.max_batch + self.max_queue, timeout)

    def submit(self, job: Job) -> None:
        """Queue `job` (the worker took it once `wait_for_room` said there was room)."""
        run = JobRun(job, GenerationEvents(self.client, self.keys, job.generation_id))
        with self._lock:
            self.queue.append(run)
            self._publish_in_flight()
            self._lock.notify_all()

    def shutdown(self) -> None:
        """Wait for the loop to end everything (it does once `stopping()`), then any late arrival."""
        self._thread.join()
        self._cancel_all()

    def _loop(self) -> None:
        while True:
            try:
                if self.stopping():
                    self._cancel_all()
                    return
                self._poll_cancels()
                self._admit()
                if self.running:
                    self._note_sharing()
                    self._write(self.decoder.step())
                else:
                    self._wait_for_work()
            except redis.RedisError as exc:  # keep the batch; events written meanwhile are lost
                log.warning("Redis unavailable (%s); retrying", exc)
                time.sleep(1.0)
            except Exception as exc:  # a failed forward pass: fail its jobs, keep the worker
                log.exception("Decoding failed")
                self._fail_running(exc)

    def _note_sharing(self) -> None:
        """Each running job hears how many others this step decodes beside it: a rate measured while
        others shared the worker is marked so (inference.protocol.request_metrics' `shared_with_*`)."""
        others = len(self.running) - 1
        for run in self.running.values():
            run.note_sharing(others)

    def _wait_for_work(self) -> None:
        with self._lock:
            if not self.queue:
                self._lock.wait(self.IDLE_WAIT_S)

    def _admit(self) -> None:
        while len(self.running) < self.max_batch:
            with self._lock:
                if not self.queue:
                    return
                # Out of the queue at once (a queue slot frees up), still in flight while it starts.
                self._starting = self.queue.popleft()
            try:
                self._start(self._starting)
            finally:
                with self._lock:
                    self._starting = None
                    self._publish_in_flight()

    def _start(self, run: JobRun) -> None:
        """Prefill `run` into the decoder, or end it alone (cancelled, bad, too long, failed)."""
        input_ids = run.start(self.decoder.engine)
        if input_ids is None:
            self._count_finished([run])
            return
        try:
            row, chunks = self.decoder.join(input_ids, run.job.params, tag=run)
        except Exception as exc:  # a failed prefill fails this job only
            log.exception("Generation %s failed", run.job.generation_id)
            run.engine_failed(exc)
            self._count_finished([run])
            return
        self.running[row] = run
        self._write([(row, chunk) for chunk in chunks])

    def _write(self, chunks: Sequence[tuple[Any, Chunk]]) -> None:
        """Every event of these chunks in one round trip; ended jobs leave `running`."""
        pipe = self.client.pipeline(transaction=False)
        ended = [self.running.pop(row) for row, chunk in chunks if self.running[row].emit(chunk, pipe)]
        pipe.execute()
        self._count_finished(ended)

    def _poll_cancels(self) -> None:
        """Cancel flags of every running and queued job, at most every CANCEL_POLL_S."""
        now = time.monotonic()
        if now - self._last_cancel_poll < self.CANCEL_POLL_S:
            return
        self._last_cancel_poll = now
        cancelled = [run for run in self._note_cancel_keys() if run.cancel_asked]
        if cancelled:
            self._cut_short(cancelled)

    def _note_cancel_keys(self) -> list[JobRun]:
        """Every running and queued job, each noting whether its cancel key is set (one round trip)."""
        runs = self._held()
        if not runs:
            return []
        pipe = self.client.pipeline(transaction=False)
        for run in runs:
            pipe.exists(run.events.cancel_key)
        for run, flag in zip(runs, pipe.execute(), strict=True):
            run.note_cancel_key(bool(flag))
        return runs

    def _cancel_all(self) -> None:
        """The worker is stopping: end every job held (JobRun tells cancelled from failed)."""
        try:
            runs = self._note_cancel_keys()
        except redis.RedisError:  # cannot tell who asked: the events below will not get through either
            runs = self._held()
        if runs:
            self._cut_short(runs)

    def _held(self) -> list[JobRun]:
        with self._lock:
            return list(self.running.values()) + list(self.queue)

    def _cut_short(self, runs: list[JobRun]) -> None:
        """End these jobs now, running ones with their partial text."""
        queued = [run for run in runs if run not in self.running.values()]
        with self._lock:
            for run in queued:
                self.queue.remove(run)
        rows = [row for row, run in self.running.items() if run in runs]
        self._write(self.decoder.cancel(rows))
        pipe = self.client.pipeline(transaction=False)
        for run in queued:
            run.cut_short(pipe)
        pipe.execute()
        self._count_finished(queued)

    def _fail_running(self, exc: Exception) -> None:
        pipe = self.client.pipeline(transaction=False)
        failed = list(self.running.values())
        for run in failed:
            run.engine_failed(exc, pipe)
        self.running.clear()
        self.decoder.reset()
        try:
            pipe.execute()
            self._count_finished(failed)
        except redis.RedisError as redis_exc:
            log.warning("Could not report the failed jobs: %s", redis_exc)

    def _count_finished(self, runs: list[JobRun]) -> None:
        if not runs:
            return
        with self._lock:
            self.status.requests_finished(len(runs), self._in_flight())
            self._lock.notify_all()  # room for the worker's next job

    def _publish_in_flight(self) -> None:
        """Under the lock, so the main thread and the loop never write counts out of order."""
        self.status.set_in_flight(self._in_flight())

    def _in_flight(self) -> int:
        return len(self.queue) + len(self.running) + (self._starting is not None)
