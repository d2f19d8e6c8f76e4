"""One job's lifecycle: the only code that writes a job's events.

    admitted --start--> started --tokens--> done | cancelled | failed
        |                  (a running job is cut short: cancelled, or failed if the worker is stopping)
        +--> cancelled | failed (cut short before it started, refused, or a prompt that cannot run)

Every way of serving a job (`inference.scheduler`, batched or one at a time) drives
a `JobRun`, so whichever way a job runs it is cancelled, cut short by a stopping
worker, failed, finished and measured the same way, and its stream always gets its
TTL at the end. The rule for a job cut short: CANCELLED if its cancel key asked for
it; otherwise the worker itself is stopping (the orchestrator stopped it, or its
parent died) and nobody cancelled the job, so its viewers are told it failed
(WORKER_DIED, with the partial answer kept by the Django side).
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections.abc import Sequence
from typing import Any

import redis

from inference import protocol
from inference.chunks import FINISH_CANCELLED, Chunk, Failure, Finish, PromptTooLong, TokenChunk
from inference.decoding import Prompter
from inference.protocol import Job
from inference.transport import WORKER_STOPPING, GenerationEvents

log = logging.getLogger(__name__)

ADMITTED = "admitted"  # handed to a scheduler, not yet started
STARTED = "started"  # its STARTED event is written; tokens may follow
ENDED = "ended"  # its terminal event is written


class JobRun:
    """One job from admission to its terminal event.

    Methods that write take an optional pipeline, so a scheduler can write many
    jobs' events in one round trip; each ending method writes exactly one terminal
    event and the stream's TTL.
    """

    def __init__(self, job: Job, events: GenerationEvents):
        self.job = job
        self.events = events
        self.state = ADMITTED
        self.scheduled_at: float | None = None  # when it left the queue to start
        self.cancel_asked = False  # its cancel key was seen: a cut-short end is CANCELLED, not a failure
        self.parts: list[str] = []  # the text streamed so far
        self.chars = 0  # its length
        self.token_times: list[float] = []
        # Other jobs decoding beside it on this worker, noted at each decode step (`note_sharing`).
        self.shared_max = 0
        self.shared_sum = 0
        self.shared_steps = 0

    def note_sharing(self, others: int) -> None:
        """A decode step is about to run with `others` other jobs in the same batch/worker."""
        self.shared_max = max(self.shared_max, others)
        self.shared_sum += others
        self.shared_steps += 1

    def note_cancel_key(self, is_set: bool) -> None:
        """Record what the job's cancel key said (once set, it stays asked)."""
        self.cancel_asked = self.cancel_asked or is_set

    def start(self, engine: Prompter) -> Sequence[Any] | None:
        """Leave the queue: the prompt (token ids, or the messages for an engine that does not
        tokenise), or None once the job has ended instead (cancelled before it started, or a
        conversation or prompt the model cannot take)."""
        self.scheduled_at = time.time()
        self.note_cancel_key(self.events.cancel_requested())
        if self.cancel_asked:
            self.cut_short()
            return None
        input_ids = self._prompt_ids(engine)
        if input_ids is None:
            return None
        prompt_tokens = len(input_ids) if engine.counts_tokens else None
        self.events.started(prompt_tokens=prompt_tokens, queue_s=max(0.0, self.scheduled_at - self.job.enqueued_at))
        self.state = STARTED
        return input_ids

    def emit(self, chunk: Chunk, pipe: redis.client.Pipeline | None = None) -> bool:
        """Write one chunk's event(s); True when it ended the job."""
        events = self._events(pipe)
        if isinstance(chunk, TokenChunk):
            self.token_times.append(time.time())
            events.token(chunk.text_delta, len(self.parts) + 1, self.chars)
            self.parts.append(chunk.text_delta)
            self.chars += len(chunk.text_delta)
            return False
        if isinstance(chunk, Failure):  # this request failed alone (an endpoint's error)
            events.failed(chunk.reason, chunk.code)
            self._end(events)
            return True
        if chunk.text_delta:  # held-back text at the very end: no new token, same n
            events.token(chunk.text_delta, chunk.generated_tokens, self.chars)
            self.parts.append(chunk.text_delta)
            self.chars += len(chunk.text_delta)
        text = "".join(self.parts)
        metrics = request_metrics(self.job, self.scheduled_at, chunk, self.token_times, self)
        log_finish(self.job.generation_id, chunk, metrics)
        if chunk.reason == FINISH_CANCELLED:
            self._cut_short(events, text, metrics)
        else:
            events.done(text, chunk.reason, metrics)
        self._end(events)
        return True

    def cut_short(self, pipe: redis.client.Pipeline | None = None) -> None:
        """End a job that never started (cancelled, or the worker is stopping)."""
        events = self._events(pipe)
        self._cut_short(events, "", request_metrics(self.job, self.scheduled_at, None, [], self))
        self._end(events)

    def fail(self, reason: str, code: str, pipe: redis.client.Pipeline | None = None) -> None:
        events = self._events(pipe)
        events.failed(reason, code)
        self._end(events)

    def engine_failed(self, exc: Exception, pipe: redis.client.Pipeline | None = None) -> None:
        """The model raised while this job ran: the job fails, the worker goes on."""
        self.fail(f"The model failed while generating: {first_line(exc)}", protocol.ENGINE_ERROR, pipe)

    def _cut_short(self, events: GenerationEvents, text: str, metrics: dict[str, Any]) -> None:
        if self.cancel_asked:
            events.cancelled(text, metrics)
        else:
            events.failed(WORKER_STOPPING, protocol.WORKER_DIED)

    def _prompt_ids(self, engine: Prompter) -> Sequence[Any] | None:
        """The job's prompt ids, or None after failing a job that cannot run."""
        try:
            input_ids = engine.encode(self.job.messages)
        except Exception as exc:  # chat templates reject some conversations (e.g. roles not alternating)
            self.fail(f"This model cannot take this conversation: {first_line(exc)}", protocol.BAD_JOB)
            return None
        if not input_ids:
            self.fail("The prompt is empty.", protocol.BAD_JOB)
            return None
        if not engine.counts_tokens:
            return input_ids  # the server that tokenises it says when it is too long
        try:
            engine.check_context(len(input_ids), self.job.params)
        except PromptTooLong as exc:
            self.fail(str(exc), protocol.PROMPT_TOO_LONG)
            return None
        return input_ids

    def _events(self, pipe: redis.client.Pipeline | None) -> GenerationEvents:
        return self.events if pipe is None else self.events.via(pipe)

    def _end(self, events: GenerationEvents) -> None:
        if self.state == ENDED:
            raise RuntimeError(f"Generation {self.job.generation_id} already ended")
        events.expire()
        self.state = ENDED


def request_metrics(job: Job, scheduled_at: float | None, finish: Finish | None, token_times: list[float],
                    run: JobRun | None = None) -> dict:
    """protocol.request_metrics plus inter-token latency and speculative acceptance; `run`: the job's
    run, which noted how many others shared the worker while it decoded."""
    metrics = protocol.request_metrics(
        arrival_time=job.enqueued_at,
        first_scheduled_time=scheduled_at,
        first_token_time=finish.first_token_time if finish else None,
        last_token_time=finish.last_token_time if finish else None,
        finished_time=time.time(),
        prompt_tokens=finish.prompt_tokens if finish else 0,
        generated_tokens=finish.generated_tokens if finish else 0,
        shared_with_max=run.shared_max if run else 0,
        shared_with_mean=run.shared_sum / run.shared_steps if run and run.shared_steps else 0.0,
    )
    gaps = sorted(b - a for a, b in itertools.pairwise(token_times))
    metrics["itl_mean_s"] = sum(gaps) / len(gaps) if gaps else None
    metrics["itl_p95_s"] = gaps[math.ceil(0.95 * len(gaps)) - 1] if gaps else None
    if finish is not None and finish.proposed_tokens:  # only a speculative engine proposes tokens
        metrics["spec_acceptance_rate"] = finish.accepted_tokens / finish.proposed_tokens
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


def first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0][:300] if lines else "") or type(exc).__name__
