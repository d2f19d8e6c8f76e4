"""Running jobs on an engine and reporting them as generation events.

`SingleJobScheduler` runs one job at a time to completion; `inference.batching`
has the scheduler that interleaves many. Both share what is here: stop sequences
(`StopText`) and the per-request metrics (`request_metrics`). The worker hands a
scheduler parsed jobs (`submit`) and a way to learn that it must stop.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import redis

from inference import protocol
from inference.engine import FINISH_CANCELLED, FINISH_STOP, Engine, Finish, PromptTooLong, TokenChunk
from inference.protocol import Job, Keys
from inference.transport import GenerationEvents, WorkerStatus

log = logging.getLogger(__name__)


class StopText:
    """Cuts a stream of text deltas before the first stop sequence.

    A delta may end with the beginning of a stop sequence that the next delta
    completes, so the longest tail that could still start one (at most the longest
    stop's length - 1 characters) is held back until it no longer can.
    """

    def __init__(self, stops: Iterable[str]):
        self.stops = tuple(s for s in stops if s)
        self.held = ""
        self.stopped = False

    def feed(self, text: str) -> str:
        """What of `text` (plus the held tail) may be streamed now."""
        if self.stopped:
            return ""
        if not self.stops:
            return text
        pending = self.held + text
        cut = min((i for i in (pending.find(s) for s in self.stops) if i >= 0), default=-1)
        if cut >= 0:
            self.stopped, self.held = True, ""
            return pending[:cut]
        keep = self._open_tail(pending)
        self.held = pending[len(pending) - keep :]
        return pending[: len(pending) - keep]

    def flush(self) -> str:
        """The held tail, at the end of a generation that did not stop on a sequence."""
        held, self.held = self.held, ""
        return held

    def _open_tail(self, text: str) -> int:
        """The length of the longest suffix of `text` that is a proper prefix of a stop."""
        longest = min(len(text), max(len(s) for s in self.stops) - 1)
        for length in range(longest, 0, -1):
            tail = text[-length:]
            if any(s.startswith(tail) for s in self.stops):
                return length
        return 0


def with_stop_sequences(chunks: Iterator, stop_text: StopText, prompt_tokens: int) -> Iterator:
    """An engine's chunks with their text cut at the first stop sequence.

    Token chunks carry only what may be streamed; on a stop the engine's generator
    is closed and a Finish(FINISH_STOP) ends the stream. Works for any engine.
    """
    generated, first_time, last_time = 0, None, None
    for chunk in chunks:
        if isinstance(chunk, TokenChunk):
            generated += 1
            last_time = time.time()
            first_time = first_time or last_time
            yield TokenChunk(chunk.token_id, stop_text.feed(chunk.text_delta))
            if stop_text.stopped:
                chunks.close()
                yield Finish(FINISH_STOP, generated, prompt_tokens, first_time, last_time)
                return
        else:
            text = stop_text.feed(chunk.text_delta)
            if stop_text.stopped and chunk.reason != FINISH_CANCELLED:
                yield dataclasses.replace(chunk, text_delta=text, reason=FINISH_STOP)
            else:
                yield dataclasses.replace(chunk, text_delta=text + stop_text.flush())
            return


def request_metrics(job: Job, scheduled_at: float | None, finish: Finish | None, token_times: list[float]) -> dict:
    """protocol.request_metrics plus inter-token latency and speculative acceptance."""
    metrics = protocol.request_metrics(
        arrival_time=job.enqueued_at,
        first_scheduled_time=scheduled_at,
        first_token_time=finish.first_token_time if finish else None,
        last_token_time=finish.last_token_time if finish else None,
        finished_time=time.time(),
        prompt_tokens=finish.prompt_tokens if finish else 0,
        generated_tokens=finish.generated_tokens if finish else 0,
    )
    gaps = sorted(b - a for a, b in itertools.pairwise(token_times))
    metrics["itl_mean_s"] = sum(gaps) / len(gaps) if gaps else None
    metrics["itl_p95_s"] = gaps[math.ceil(0.95 * len(gaps)) - 1] if gaps else None
    proposed = getattr(finish, "proposed_tokens", 0)
    if proposed:  # only a speculative engine proposes tokens
        metrics["spec_acceptance_rate"] = finish.accepted_tokens / proposed
    return metrics


def log_finish(generation_id: str, finish: Finish, metrics: dict[str, Any]) -> None:
    rate = metrics["decode_tokens_per_s"]
    log.info(
        "Generation %s %s: %d prompt + %d new tokens, %s tokens/s",
        generation_id,
        finish.reason,
        finish.prompt_tokens,
        finish.generated_tokens,
        f"{rate:.1f}" if rate else "-",
    )


class SingleJobScheduler:
    def __init__(
        self,
        engine: Engine,
        client: redis.Redis,
        keys: Keys,
        status: WorkerStatus,
        stopping: Callable[[], bool],
    ):
        self.engine = engine
        self.client = client
        self.keys = keys
        self.status = status
        self.stopping = stopping  # true once the worker is shutting down: cancel what runs

    def start(self) -> None:
        """Nothing to start: jobs run on the caller's thread."""

    def submit(self, job: Job, received_at: float) -> None:
        self.run(job, received_at)

    def shutdown(self) -> None:
        """Nothing to stop: `run` has returned by the time the worker stops."""

    def run(self, job: Job, scheduled_at: float) -> None:
        """Run `job` to a terminal event; never raises for a problem of the job's own."""
        events = GenerationEvents(self.client, self.keys, job.generation_id)
        if events.cancel_requested() or self.stopping():
            events.cut_short("", request_metrics(job, scheduled_at, None, []), asked=events.cancel_requested())
            events.expire()
            self.status.job_finished()
            return
        self.status.job_started()
        try:
            self._generate(job, scheduled_at, events)
        except redis.RedisError:
            raise  # the transport itself is gone: the worker loop deals with it
        except Exception as exc:  # any engine failure ends the job, not the worker
            log.exception("Generation %s failed", job.generation_id)
            events.failed(f"The model failed while generating: {first_line(exc)}", protocol.ENGINE_ERROR)
        finally:
            events.expire()
            self.status.job_finished()

    def _generate(self, job: Job, scheduled_at: float, events: GenerationEvents) -> None:
        input_ids = prepare_prompt(self.engine, job, events)
        if input_ids is None:
            return
        events.started(prompt_tokens=len(input_ids), queue_s=max(0.0, scheduled_at - job.enqueued_at))

        def should_cancel() -> bool:
            return self.stopping() or events.cancel_requested()

        parts: list[str] = []
        token_times: list[float] = []
        finish: Finish | None = None
        chunks = self.engine.stream(input_ids, job.params, should_cancel)
        for chunk in with_stop_sequences(chunks, StopText(job.params.stop), len(input_ids)):
            if isinstance(chunk, TokenChunk):
                token_times.append(time.time())
                parts.append(chunk.text_delta)
                events.token(chunk.text_delta, len(parts))
            else:
                finish = chunk
        assert finish is not None, "Engine.stream always ends with a Finish"
        if finish.text_delta:  # held-back text at the very end: no new token, same n
            parts.append(finish.text_delta)
            events.token(finish.text_delta, finish.generated_tokens)
        text = "".join(parts)
        metrics = request_metrics(job, scheduled_at, finish, token_times)
        log_finish(job.generation_id, finish, metrics)
        if finish.reason == FINISH_CANCELLED:
            events.cut_short(text, metrics, asked=events.cancel_requested())
        else:
            events.done(text, finish.reason, metrics)


def prepare_prompt(engine, job: Job, events: GenerationEvents) -> list[int] | None:
    """The job's prompt ids, or None after writing the FAILED event of a job that cannot run."""
    try:
        input_ids = engine.encode(job.messages)
    except Exception as exc:  # noqa: BLE001 - chat templates reject some conversations (e.g. roles not alternating)
        events.failed(f"This model cannot take this conversation: {first_line(exc)}", protocol.BAD_JOB)
        return None
    if not input_ids:
        events.failed("The prompt is empty.", protocol.BAD_JOB)
        return None
    try:
        engine.check_context(len(input_ids), job.params)
    except PromptTooLong as exc:
        events.failed(str(exc), protocol.PROMPT_TOO_LONG)
        return None
    return input_ids


def first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0][:300] if lines else "") or type(exc).__name__
