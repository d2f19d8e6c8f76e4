"""Continuous batching: many generations interleaved in one decode loop.

`BatchedDecoder` keeps one running batch over a plain `Engine`'s model. Its rows
are requests at different positions: a newcomer is prefilled on its own, then its
KV cache joins the batch's, everything left-padded to a common length, with an
attention mask hiding the padding and per-row position ids counting only real
tokens, so each row computes what it would alone. Finished or cancelled rows leave
at once, and the padding every remaining row shares is trimmed away.

`BatchScheduler` feeds the decoder from a bounded queue and writes each request's
events exactly as `SingleJobScheduler` does.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
import torch
import torch.nn.functional as F
from transformers import DynamicCache

from inference import protocol
from inference.engine import (
    FINISH_CANCELLED,
    FINISH_LENGTH,
    FINISH_STOP,
    NUCLEUS_FAST_K,
    Chunk,
    Engine,
    Finish,
    IncrementalDetokenizer,
    TokenChunk,
    sampling_generator,
)
from inference.protocol import Job, Keys, SamplingParams
from inference.scheduler import StopText, first_line, log_finish, prepare_prompt, request_metrics
from inference.transport import GenerationEvents, WorkerStatus

log = logging.getLogger(__name__)


class BatchRow:
    """One request inside the running batch: its sampling, text and stop state."""

    def __init__(self, engine: Engine, prompt_tokens: int, params: SamplingParams, tag: Any):
        self.tag = tag  # the caller's handle for this request
        self.prompt_tokens = prompt_tokens
        self.max_new_tokens = engine.check_context(prompt_tokens, params)
        self.params = params
        self.generator = None if params.greedy else sampling_generator(params, engine.device)
        self.detokenizer = IncrementalDetokenizer(engine.tokenizer)
        self.stop_text = StopText(params.stop)
        self.length = prompt_tokens  # real (unpadded) tokens in this row's cache: its next position id
        self.pending_token: int | None = None  # picked but not yet fed to the model
        self.generated = 0
        self.first_token_time: float | None = None
        self.last_token_time: float | None = None

    def finish(self, reason: str, text: str = "") -> Finish:
        return Finish(reason, self.generated, self.prompt_tokens, self.first_token_time, self.last_token_time, text)


class BatchedDecoder:
    """A running batch over `engine`'s model. Not thread-safe: one caller drives it."""

    def __init__(self, engine: Engine):
        if not engine.supports_batching:
            raise ValueError(f"{type(engine).__name__} cannot run in a batch")
        self.engine = engine
        self.rows: list[BatchRow] = []
        self.cache: DynamicCache | None = None
        self.mask: torch.Tensor | None = None  # [rows, cache length]: 1 real token, 0 padding

    def __len__(self) -> int:
        return len(self.rows)

    def join(self, input_ids: Sequence[int], params: SamplingParams, tag: Any = None) -> tuple[BatchRow, list[Chunk]]:
        """Prefill a new request alone and merge it into the batch.

        Returns its row and the chunks of its first token (a TokenChunk, then a
        Finish if that token already ended it, in which case it never joins).
        Raises PromptTooLong (before any work) when the prompt leaves no room.
        """
        if not input_ids:
            raise ValueError("The prompt is empty.")
        row = BatchRow(self.engine, len(input_ids), params, tag)
        cache = DynamicCache(config=self.engine.model.config)
        logits = self._prefill(input_ids, cache)
        chunks = self._accept(row, pick_tokens(logits.unsqueeze(0), [row])[0])
        if not isinstance(chunks[-1], Finish):
            self._merge(row, cache)
        return row, chunks

    def step(self) -> list[tuple[BatchRow, Chunk]]:
        """One forward pass for every row; finished rows leave the batch."""
        if not self.rows:
            return []
        tokens = pick_tokens(self._decode(), self.rows)
        out: list[tuple[BatchRow, Chunk]] = []
        for row, token_id in zip(self.rows, tokens, strict=True):
            out.extend((row, chunk) for chunk in self._accept(row, token_id))
        self._drop({row for row, chunk in out if isinstance(chunk, Finish)})
        return out

    def cancel(self, rows: Sequence[BatchRow]) -> list[tuple[BatchRow, Finish]]:
        """Take `rows` out of the batch now, each with a Finish(FINISH_CANCELLED)."""
        leaving = [row for row in rows if row in self.rows]
        self._drop(set(leaving))
        return [(row, self._end(row, FINISH_CANCELLED)) for row in leaving]

    def _accept(self, row: BatchRow, token_id: int) -> list[Chunk]:
        """What one picked token means for its row, as Engine.stream would yield it."""
        if token_id in self.engine.eos_ids:
            return [self._end(row, FINISH_STOP)]
        row.generated += 1
        row.last_token_time = time.time()
        row.first_token_time = row.first_token_time or row.last_token_time
        chunks: list[Chunk] = [TokenChunk(token_id, row.stop_text.feed(row.detokenizer.add(token_id)))]
        if row.stop_text.stopped:
            chunks.append(row.finish(FINISH_STOP))
        elif row.generated >= row.max_new_tokens:
            chunks.append(self._end(row, FINISH_LENGTH))
        else:
            row.pending_token = token_id
        return chunks

    @staticmethod
    def _end(row: BatchRow, reason: str) -> Finish:
        """The row's Finish with the text it still holds (an unfinished character, a stop's maybe-start)."""
        text = row.stop_text.feed(row.detokenizer.flush())
        if row.stop_text.stopped and reason != FINISH_CANCELLED:
            return row.finish(FINISH_STOP, text)
        return row.finish(reason, text + row.stop_text.flush())

    @torch.inference_mode()
    def _prefill(self, input_ids: Sequence[int], cache: DynamicCache) -> torch.Tensor:
        ids = torch.tensor([list(input_ids)], dtype=torch.long, device=self.engine.device)
        return self.engine.model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1).logits[0, -1]

    @torch.inference_mode()
    def _decode(self) -> torch.Tensor:
        """Logits [rows, vocab] for each row's pending token."""
        device = self.engine.device
        input_ids = torch.tensor([[row.pending_token] for row in self.rows], dtype=torch.long, device=device)
        position_ids = torch.tensor([[row.length] for row in self.rows], dtype=torch.long, device=device)
        self.mask = torch.cat([self.mask, self.mask.new_ones((len(self.rows), 1))], dim=1)
        logits = self.engine.model(
            input_ids=input_ids,
            attention_mask=self.mask,
            position_ids=position_ids,
            past_key_values=self.cache,
            use_cache=True,
        ).logits
        for row in self.rows:
            row.length += 1
        return logits[:, -1]

    def _merge(self, row: BatchRow, cache: DynamicCache) -> None:
        """Append `row` (its cache holds only its prompt) to the batch, left-padding the shorter side."""
        new_mask = torch.ones((1, row.length), dtype=torch.long, device=self.engine.device)
        if not self.rows:
            self.rows, self.cache, self.mask = [row], cache, new_mask
            return
        length = max(self.mask.shape[1], row.length)
        for batch_layer, new_layer in zip(self.cache.layers, cache.layers, strict=True):
            batch_layer.keys = _cat_left_padded(batch_layer.keys, new_layer.keys, length)
            batch_layer.values = _cat_left_padded(batch_layer.values, new_layer.values, length)
        self.mask = torch.cat([_left_pad(self.mask, length), _left_pad(new_mask, length)], dim=0)
        self.rows.append(row)

    def _drop(self, leaving: set[BatchRow]) -> None:
        """Remove rows from the batch, then the left padding that all remaining rows share."""
        if not leaving:
            return
        keep = [i for i, row in enumerate(self.rows) if row not in leaving]
        self.rows = [self.rows[i] for i in keep]
        if not self.rows:
            self.cache = self.mask = None
            return
        index = torch.tensor(keep, dtype=torch.long, device=self.engine.device)
        shared_padding = self.mask.shape[1] - max(row.length for row in self.rows)
        for layer in self.cache.layers:
            layer.keys = layer.keys.index_select(0, index)[:, :, shared_padding:]
            layer.values = layer.values.index_select(0, index)[:, :, shared_padding:]
        self.mask = self.mask.index_select(0, index)[:, shared_padding:]


def pick_tokens(logits: torch.Tensor, rows: Sequence[BatchRow]) -> list[int]:
    """Each row's next token from logits [rows, vocab], as `make_token_picker` would pick it.

    The softmax and top-k run once for all sampling rows (per row they cost more than
    a small model's forward share on a CPU); each row then draws from its own generator.
    """
    picks = logits.argmax(dim=-1).tolist()
    sampled = [i for i, row in enumerate(rows) if not row.params.greedy]
    if not sampled:
        return picks
    index = torch.tensor(sampled, device=logits.device)
    temperatures = torch.tensor([[rows[i].params.temperature] for i in sampled], device=logits.device)
    probs = torch.softmax(logits.index_select(0, index).float() / temperatures, dim=-1)
    top_probs, top_ids = torch.topk(probs, min(NUCLEUS_FAST_K, probs.shape[-1]))
    for j, i in enumerate(sampled):
        picks[i] = _draw(probs[j], top_probs[j], top_ids[j], rows[i])
    return picks


def _draw(probs: torch.Tensor, top_probs: torch.Tensor, top_ids: torch.Tensor, row: BatchRow) -> int:
    """`make_token_picker`'s draw (and `nucleus`), given the row's precomputed top-k."""
    top_p, generator = row.params.top_p, row.generator
    if top_p >= 1.0:
        return int(torch.multinomial(probs, 1, generator=generator))
    if top_probs.numel() < probs.numel() and float(top_probs.sum()) < top_p:
        top_probs, top_ids = torch.sort(probs, descending=True)  # a flat distribution: the full sort
    outside = torch.cumsum(top_probs, dim=-1) - top_probs >= top_p
    return int(top_ids[torch.multinomial(top_probs.masked_fill(outside, 0.0), 1, generator=generator)])


def _left_pad(tensor: torch.Tensor, length: int) -> torch.Tensor:
    """Pad `tensor` on the left of its sequence dimension (-2 for keys/values, -1 for a mask) to `length`."""
    if tensor.dim() == 2:
        return F.pad(tensor, (length - tensor.shape[1], 0))
    return F.pad(tensor, (0, 0, length - tensor.shape[-2], 0))


def _cat_left_padded(batch: torch.Tensor, new: torch.Tensor, length: int) -> torch.Tensor:
    return torch.cat([_left_pad(batch, length), _left_pad(new, length)], dim=0)


@dataclass(eq=False)
class Request:
    """A job on its way through the batch scheduler."""

    job: Job
    events: GenerationEvents
    scheduled_at: float | None = None  # when it left the queue for the batch
    row: BatchRow | None = None
    parts: list[str] = field(default_factory=list)  # the text streamed so far
    token_times: list[float] = field(default_factory=list)
    cancel_asked: bool = False  # its cancel key was seen: a cut-short end is CANCELLED, not a failure


def busy_reason(waiting: int) -> str:
    return f"This model is busy: {waiting} requests are already waiting. Try again in a moment."


class BatchScheduler:
    """Runs jobs in a continuous batch on a thread of its own.

    The worker's main thread `submit`s jobs into a bounded queue (a full queue
    refuses at once with protocol.BUSY); this scheduler's thread admits queued jobs
    into the batch at step boundaries, steps it, and writes every request's events
    with the same shapes as `SingleJobScheduler`, one Redis pipeline per step.
    """

    CANCEL_POLL_S = 0.05  # cancel flags are checked this often, for all requests in one round trip
    IDLE_WAIT_S = 0.1  # how long an idle loop sleeps before looking at `stopping` again

    def __init__(
        self,
        engine: Engine,
        client: redis.Redis,
        keys: Keys,
        status: WorkerStatus,
        stopping: Callable[[], bool],
        *,
        max_batch: int = 16,
        max_queue: int = 32,
    ):
        self.engine = engine
        self.decoder = BatchedDecoder(engine)
        self.client = client
        self.keys = keys
        self.status = status
        self.stopping = stopping  # true once the worker is shutting down: cancel everything
        self.max_batch = max(1, max_batch)
        self.max_queue = max(0, max_queue)
        self.queue: collections.deque[Request] = collections.deque()
        self.running: dict[BatchRow, Request] = {}
        self._starting: Request | None = None  # between the queue and the batch
        self._lock = threading.Condition()  # guards `queue` and in_flight writes; the loop owns the rest
        self._last_cancel_poll = 0.0
        self._thread = threading.Thread(target=self._loop, name="batch-scheduler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, job: Job, received_at: float) -> None:
        """Queue `job`, or refuse it with a BUSY failure when the queue is full."""
        events = GenerationEvents(self.client, self.keys, job.generation_id)
        with self._lock:
            waiting = len(self.queue)
            if waiting < self.max_queue:
                self.queue.append(Request(job, events))
                self._publish_in_flight()
                self._lock.notify()
                return
        log.info("Refused generation %s: %d requests waiting", job.generation_id, waiting)
        events.failed(busy_reason(waiting), protocol.BUSY)
        events.expire()

    def shutdown(self) -> None:
        """Wait for the loop to cancel everything (it does once `stopping()`), then any late arrival."""
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
                    self._step()
                else:
                    self._wait_for_work()
            except redis.RedisError as exc:  # keep the batch; events written meanwhile are lost
                log.warning("Redis unavailable (%s); retrying", exc)
                time.sleep(1.0)
            except Exception as exc:  # a failed batched forward pass: fail its requests, keep the worker
                log.exception("The batch failed")
                self._fail_running(exc)

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

    def _start(self, request: Request) -> None:
        """Prefill `request` into the batch, or end it alone (cancelled, bad, too long, failed)."""
        job, events = request.job, request.events
        request.scheduled_at = time.time()
        if events.cancel_requested():
            request.cancel_asked = True
            self._end_unstarted(request, events)
            self._count_finished([request])
            return
        input_ids = prepare_prompt(self.engine, job, events)
        if input_ids is None:
            self._count_finished([request])
            return
        events.started(prompt_tokens=len(input_ids), queue_s=max(0.0, request.scheduled_at - job.enqueued_at))
        try:
            row, chunks = self.decoder.join(input_ids, job.params, tag=request)
        except Exception as exc:  # a failed prefill fails this request only
            log.exception("Generation %s failed", job.generation_id)
            events.failed(f"The model failed while generating: {first_line(exc)}", protocol.ENGINE_ERROR)
            self._count_finished([request])
            return
        request.row = row
        self.running[row] = request
        self._write([(row, chunk) for chunk in chunks])

    def _step(self) -> None:
        self._write(self.decoder.step())

    def _write(self, chunks: list[tuple[BatchRow, Chunk]]) -> None:
        """Every event of these chunks in one round trip; finished requests leave `running`."""
        pipe = self.client.pipeline(transaction=False)
        finished = []
        for row, chunk in chunks:
            request = self.running[row]
            if self._emit(request, chunk, request.events.via(pipe)):
                finished.append(self.running.pop(row))
        pipe.execute()
        self._count_finished(finished)

    def _emit(self, request: Request, chunk: Chunk, events: GenerationEvents) -> bool:
        """Write one chunk's event(s); True when it ended the request."""
        if isinstance(chunk, TokenChunk):
            request.token_times.append(time.time())
            request.parts.append(chunk.text_delta)
            events.token(chunk.text_delta, len(request.parts))
            return False
        if chunk.text_delta:  # held-back text at the very end: no new token, same n
            request.parts.append(chunk.text_delta)
            events.token(chunk.text_delta, chunk.generated_tokens)
        text = "".join(request.parts)
        metrics = request_metrics(request.job, request.scheduled_at, chunk, request.token_times)
        log_finish(request.job.generation_id, chunk, metrics)
        if chunk.reason == FINISH_CANCELLED:
            events.cut_short(text, metrics, asked=request.cancel_asked)
        else:
            events.done(text, chunk.reason, metrics)
        events.expire()
        return True

    def _poll_cancels(self) -> None:
        """Cancel flags of every running and queued request, at most every CANCEL_POLL_S."""
        now = time.monotonic()
        if now - self._last_cancel_poll < self.CANCEL_POLL_S:
            return
        self._last_cancel_poll = now
        cancelled = [request for request in self._note_cancel_keys() if request.cancel_asked]
        if cancelled:
            self._cancel(cancelled)

    def _note_cancel_keys(self) -> list[Request]:
        """Every running and queued request, each marked if its cancel key is set (one round trip)."""
        with self._lock:
            requests = list(self.running.values()) + list(self.queue)
        if not requests:
            return []
        pipe = self.client.pipeline(transaction=False)
        for request in requests:
            pipe.exists(request.events.cancel_key)
        for request, flag in zip(requests, pipe.execute()):
            request.cancel_asked = request.cancel_asked or bool(flag)
        return requests

    def _cancel_all(self) -> None:
        """The worker is stopping: end everything; those nobody asked to cancel end as failed."""
        try:
            requests = self._note_cancel_keys()
        except redis.RedisError:  # cannot tell who asked: the events below will not get through either
            with self._lock:
                requests = list(self.running.values()) + list(self.queue)
        if requests:
            self._cancel(requests)

    def _cancel(self, requests: list[Request]) -> None:
        """End these requests now (running ones with their partial text): CANCELLED, or FAILED for
        those nobody asked to cancel (the worker is stopping)."""
        unstarted = [r for r in requests if r.row is None]
        with self._lock:
            for request in unstarted:
                self.queue.remove(request)
        self._write([(row, finish) for row, finish in self.decoder.cancel([r.row for r in requests if r.row])])
        pipe = self.client.pipeline(transaction=False)
        for request in unstarted:
            self._end_unstarted(request, request.events.via(pipe))
        pipe.execute()
        self._count_finished(unstarted)

    def _end_unstarted(self, request: Request, events: GenerationEvents) -> None:
        """The end of a request cut short before it reached the batch."""
        events.cut_short("", request_metrics(request.job, request.scheduled_at, None, []), asked=request.cancel_asked)
        events.expire()

    def _fail_running(self, exc: Exception) -> None:
        pipe = self.client.pipeline(transaction=False)
        failed = list(self.running.values())
        for request in failed:
            events = request.events.via(pipe)
            events.failed(f"The model failed while generating: {first_line(exc)}", protocol.ENGINE_ERROR)
            events.expire()
        self.running.clear()
        self.decoder = BatchedDecoder(self.engine)
        try:
            pipe.execute()
            self._count_finished(failed)
        except redis.RedisError as redis_exc:
            log.warning("Could not report the failed batch: %s", redis_exc)

    def _count_finished(self, requests: list[Request]) -> None:
        if not requests:
            return
        with self._lock:
            self.status.requests_finished(len(requests), self._in_flight())

    def _publish_in_flight(self) -> None:
        """Under the lock, so the main thread and the loop never write counts out of order."""
        self.status.set_in_flight(self._in_flight())

    def _in_flight(self) -> int:
        return len(self.queue) + len(self.running) + (self._starting is not None)
