"""Running jobs on an engine and reporting them as generation events.

`SingleJobScheduler` runs one job at a time to completion. It is the piece a batch
scheduler (several generations interleaved in one decode loop) will replace: the
worker only hands it parsed jobs and a way to learn that it must stop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import redis

from inference import protocol
from inference.engine import FINISH_CANCELLED, Engine, Finish, PromptTooLong, TokenChunk
from inference.protocol import Job, Keys
from inference.transport import GenerationEvents, WorkerStatus

log = logging.getLogger(__name__)


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

    def run(self, job: Job, scheduled_at: float) -> None:
        """Run `job` to a terminal event; never raises for a problem of the job's own."""
        events = GenerationEvents(self.client, self.keys, job.generation_id)
        if events.cancel_requested() or self.stopping():
            events.cancelled("", self._metrics(job, scheduled_at, None))
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
            events.failed(f"The model failed while generating: {_first_line(exc)}", protocol.ENGINE_ERROR)
        finally:
            events.expire()
            self.status.job_finished()

    def _generate(self, job: Job, scheduled_at: float, events: GenerationEvents) -> None:
        try:
            input_ids = self.engine.encode(job.messages)
        except Exception as exc:  # noqa: BLE001 - chat templates reject some conversations (e.g. roles not alternating)
            events.failed(f"This model cannot take this conversation: {_first_line(exc)}", protocol.BAD_JOB)
            return
        if not input_ids:
            events.failed("The prompt is empty.", protocol.BAD_JOB)
            return
        try:
            self.engine.check_context(len(input_ids), job.params)
        except PromptTooLong as exc:
            events.failed(str(exc), protocol.PROMPT_TOO_LONG)
            return
        events.started(prompt_tokens=len(input_ids), queue_s=max(0.0, scheduled_at - job.enqueued_at))

        def should_cancel() -> bool:
            return self.stopping() or events.cancel_requested()

        parts: list[str] = []
        finish: Finish | None = None
        for chunk in self.engine.stream(input_ids, job.params, should_cancel):
            if isinstance(chunk, TokenChunk):
                parts.append(chunk.text_delta)
                events.token(chunk.text_delta, len(parts))
            else:
                finish = chunk
        assert finish is not None, "Engine.stream always ends with a Finish"
        if finish.text_delta:  # held-back bytes at the very end: no new token, same n
            parts.append(finish.text_delta)
            events.token(finish.text_delta, finish.generated_tokens)
        text = "".join(parts)
        metrics = self._metrics(job, scheduled_at, finish)
        log.info(
            "Generation %s %s: %d prompt + %d new tokens, %s tokens/s",
            job.generation_id,
            finish.reason,
            finish.prompt_tokens,
            finish.generated_tokens,
            f"{metrics['decode_tokens_per_s']:.1f}" if metrics["decode_tokens_per_s"] else "-",
        )
        if finish.reason == FINISH_CANCELLED:
            events.cancelled(text, metrics)
        else:
            events.done(text, finish.reason, metrics)

    @staticmethod
    def _metrics(job: Job, scheduled_at: float, finish: Finish | None) -> dict:
        return protocol.request_metrics(
            arrival_time=job.enqueued_at,
            first_scheduled_time=scheduled_at,
            first_token_time=finish.first_token_time if finish else None,
            last_token_time=finish.last_token_time if finish else None,
            finished_time=time.time(),
            prompt_tokens=finish.prompt_tokens if finish else 0,
            generated_tokens=finish.generated_tokens if finish else 0,
        )


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0][:300] if lines else "") or type(exc).__name__
