"""Continuous batching: many generations interleaved in one decode loop.

`BatchedDecoder` keeps one running batch over a plain `Engine`'s model. Its rows
are requests at different positions. A newcomer waits for the next `step`, which
prefills every newcomer of similar length in one left-padded forward pass (per-row
position ids counting only real tokens), then copies each one's real positions into
a slot of the batch's `SlotCache`. A decode step feeds every row's pending token at
its own column, attending to its own columns only, so each row computes what it
would alone; on a GPU that step is a replayed CUDA graph (inference.decode_step).
Finished or cancelled rows leave at once, their slots taken by the last rows.

Tensor work only, no Redis: `inference.scheduler` feeds it jobs and writes their
events (it is one `inference.decoding.Decoder`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any, cast

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from inference import protocol
from inference.chunks import (
    FINISH_CANCELLED,
    FINISH_LENGTH,
    FINISH_STOP,
    FINISH_STOP_SEQUENCE,
    Chunk,
    Failure,
    Finish,
    PromptTooLong,
    TokenChunk,
)
from inference.constrained import mask_logits
from inference.decode_step import BATCH_BUCKETS, allocate_fixed, make_step
from inference.decoding import StopText
from inference.engine import Engine, IncrementalDetokenizer, TokenSampler, sampling_generator
from inference.protocol import SamplingParams
from inference.slots import SlotCache

log = logging.getLogger(__name__)


class BatchRow:
    """One request inside the running batch: its sampling, text and stop state."""

    def __init__(self, engine: Engine, input_ids: Sequence[int], params: SamplingParams, tag: Any):
        prompt_tokens = len(input_ids)
        self.tag = tag  # the caller's handle for this request
        self.input_ids: list[int] | None = list(input_ids)  # until the prefill
        self.prompt_tokens = prompt_tokens
        self.max_new_tokens = engine.check_context(prompt_tokens, params)
        self.params = params
        self.generator = None if params.greedy else sampling_generator(params, engine.device)
        self.detokenizer = IncrementalDetokenizer(engine.tokenizer)
        self.stop_text = StopText(params.stop)
        self.constraint = engine.grammars.constraint(params)  # None: decoding is not constrained
        self.length = prompt_tokens  # real (unpadded) tokens in this row's cache: its next position id
        self.pending_token: int | None = None  # picked but not yet fed to the model
        self.generated = 0
        self.first_token_time: float | None = None
        self.last_token_time: float | None = None

    def finish(self, reason: str, text: str = "") -> Finish:
        return Finish(reason, self.generated, self.prompt_tokens, self.first_token_time, self.last_token_time, text)


class BatchedDecoder:
    """A running batch over `engine`'s model. Not thread-safe: one caller drives it.

    The batch's keys and values live in a `SlotCache` (inference.slots): a row in slot i
    from its prefill to its end, at columns 0.. in the order of its tokens; a step writes
    each row's next column in place and a leaving row's slot takes the last row's, so no
    step copies the cache. Each decode step is one `inference.decode_step` call: replayed
    from a captured CUDA graph on a GPU, run eagerly elsewhere (`step_kind` says which).

    `max_rows`: the most rows at once (the worker's batch); `graphs`: capture the steps on
    CUDA; `compiled`: torch.compile them before capturing (inference.decode_step.GraphStep).
    `memory_fraction`: on a GPU, the share of free memory (after the weights) the fixed
    slots may take, which bounds their columns (and so a row's context) below the model's.
    """

    # Newcomers share a prefill pass while its padded size stays within this factor of their
    # real tokens: a pass over many prompts costs less per token than one per prompt
    # (measured on 2 cores, 16 prompts of 45 tokens: ~25% less when idle, 4x less when the
    # cores are contended), unless the padding eats that up.
    PREFILL_PADDING = 1.5
    PREFILL_MAX_TOKENS = 16384  # padded tokens in one prefill pass: bounds its activations
    # A longer prompt is prefilled this many tokens a step, beside the running rows' decoding,
    # so it holds their next token back by one chunk's pass, not by its whole prompt's.
    PREFILL_CHUNK = 512
    FIRST_COLUMNS = 256  # columns a growing cache starts with (it doubles as rows grow)

    def __init__(self, engine: Engine, *, max_rows: int = 16, graphs: bool = True, compiled: bool = False,
                 memory_fraction: float = 0.5):
        if not engine.supports_batching:
            raise ValueError(f"{type(engine).__name__} cannot run in a batch")
        self.engine = engine
        self.rows: list[BatchRow] = []  # running: row i in slot i
        self.waiting: list[BatchRow] = []  # joined, to be prefilled by the next step
        self.chunking: list[tuple[BatchRow, DynamicCache]] = []  # long prompts, a chunk a step
        self.sampler = TokenSampler([], engine.device)
        fixed = engine.device.type == "cuda"
        slots = _bucket_up(max_rows) if fixed else max(1, max_rows)
        columns = engine.context_length
        num_layers = engine.config.get_text_config().num_hidden_layers
        self.cache = SlotCache(num_layers, slots=slots, columns=columns, fixed=fixed)
        if fixed:  # allocate (and capture, below) now: it is part of the worker's load
            allocate_fixed(self.cache, engine.model, engine.device, memory_fraction)
        self._step = make_step(engine.model, self.cache, engine.device, slots, graphs=graphs, compiled=compiled)
        self.step_kind = self._step.description
        # What the worker holds on its GPU now, the slots and the graphs' pool included: the
        # orchestrator's measured figure for it (None on a CPU, whose cache grows as it goes).
        self.held_mb = torch.cuda.memory_reserved(engine.device) / 2**20 if fixed else None

    @property
    def columns(self) -> int:
        """The most positions (prompt and answer) a row may hold."""
        return self.cache.max_columns

    def __len__(self) -> int:
        return len(self.rows) + len(self.waiting) + len(self.chunking)

    def join(self, input_ids: Sequence[int], params: SamplingParams, tag: Any = None) -> tuple[BatchRow, list[Chunk]]:
        """Take a new request: its row, and no chunks yet.

        Its prompt is prefilled by the next `step`, together with every other newcomer
        (one padded forward pass, `PREFILL_PADDING` permitting), which then yields its
        first token (and a Finish if that token already ended it, when it never joins
        the running rows; a Failure if the prefill raised). Raises PromptTooLong
        (before any work) when the prompt leaves no room.
        """
        if not input_ids:
            raise ValueError("The prompt is empty.")
        if len(input_ids) >= self.columns:
            raise PromptTooLong(len(input_ids), self.columns)
        row = BatchRow(self.engine, input_ids, params, tag)
        row.max_new_tokens = min(row.max_new_tokens, self.columns - row.prompt_tokens)
        self.waiting.append(row)
        return row, []

    def step(self) -> list[tuple[BatchRow, Chunk]]:
        """One forward pass for every running row (its next token), then the newcomers'
        prefill (their first tokens; survivors run from the next step on); finished rows leave."""
        out: list[tuple[BatchRow, Chunk]] = []
        if self.rows:
            tokens = self.sampler.pick(mask_logits(self._decode(), [row.constraint for row in self.rows]))
            for row, token_id in zip(self.rows, tokens, strict=True):
                out.extend((row, chunk) for chunk in self._accept(row, token_id))
            self._drop({row for row, chunk in out if isinstance(chunk, Finish)})
        long = [row for row in self.waiting if row.prompt_tokens > self.PREFILL_CHUNK]
        self.waiting = [row for row in self.waiting if row.prompt_tokens <= self.PREFILL_CHUNK]
        self.chunking.extend((row, DynamicCache(config=self.engine.config)) for row in long)
        for group in self._prefill_groups():
            out.extend(self._admit(group))
        if self.chunking:
            out.extend(self._prefill_chunk())
        return out

    def cancel(self, rows: Sequence[BatchRow]) -> list[tuple[BatchRow, Finish]]:
        """Take `rows` out of the batch (or the newcomers) now, each with a Finish(FINISH_CANCELLED)."""
        waiting = [row for row in rows if row in self.waiting or any(row is r for r, _ in self.chunking)]
        self.waiting = [row for row in self.waiting if row not in waiting]
        self.chunking = [(row, cache) for row, cache in self.chunking if row not in waiting]
        leaving = [row for row in rows if row in self.rows]
        self._drop(set(leaving))
        return [(row, self._end(row, FINISH_CANCELLED)) for row in waiting + leaving]

    def reset(self) -> None:
        """Forget every row (after a failed forward pass; the slots are rewritten by the next rows)."""
        self.waiting, self.chunking = [], []
        self._set_rows([])

    def _accept(self, row: BatchRow, token_id: int) -> list[Chunk]:
        """What one picked token means for its row, as Engine.stream would yield it."""
        if token_id in self.engine.eos_ids:
            return [self._end(row, FINISH_STOP)]
        row.generated += 1
        row.last_token_time = time.time()
        row.first_token_time = row.first_token_time or row.last_token_time
        chunks: list[Chunk] = [TokenChunk(token_id, row.stop_text.feed(row.detokenizer.add(token_id)))]
        if row.stop_text.stopped:
            chunks.append(row.finish(FINISH_STOP_SEQUENCE))
        elif row.constraint is not None and row.constraint.accept(token_id):  # the grammar is complete
            chunks.append(self._end(row, FINISH_STOP))
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
            return row.finish(FINISH_STOP_SEQUENCE, text)
        return row.finish(reason, text + row.stop_text.flush())

    def _set_rows(self, rows: list[BatchRow]) -> None:
        """The batch's rows, in slot order, and a sampler for exactly these."""
        self.rows = rows
        self.sampler = TokenSampler([row.params for row in rows], self.engine.device,
                                    [row.generator for row in rows])

    def _prefill_groups(self) -> list[list[BatchRow]]:
        """The newcomers (all taken), longest first, in groups that share a prefill pass."""
        waiting, self.waiting = sorted(self.waiting, key=lambda row: -row.prompt_tokens), []
        groups: list[list[BatchRow]] = []
        real = 0
        for row in waiting:
            if groups:
                group = groups[-1]
                longest = group[0].prompt_tokens
                padded = longest * (len(group) + 1)
                if padded <= self.PREFILL_PADDING * (real + row.prompt_tokens) and padded <= self.PREFILL_MAX_TOKENS:
                    group.append(row)
                    real += row.prompt_tokens
                    continue
            groups.append([row])
            real = row.prompt_tokens
        return groups

    def _admit(self, group: list[BatchRow]) -> list[tuple[BatchRow, Chunk]]:
        """Prefill `group` in one pass; its first tokens; those it did not end join the batch.
        A failure fails these rows alone (the running batch is untouched)."""
        try:
            logits, cache = self._prefill(group)
            return self._first_tokens(group, logits, cache)
        except Exception as exc:
            return _failed(group, exc)

    def _prefill_chunk(self) -> list[tuple[BatchRow, Chunk]]:
        """The next chunk of the first long prompt in line (then it goes to the back of the line);
        after its last chunk, its first token, and its row joins the batch unless that ended it."""
        row, cache = self.chunking.pop(0)
        assert row.input_ids is not None
        done = cache.get_seq_length()
        chunk = row.input_ids[done : done + self.PREFILL_CHUNK]
        try:
            with torch.inference_mode():
                ids = torch.tensor([chunk], dtype=torch.long, device=self.engine.device)
                positions = torch.arange(done, done + len(chunk), device=self.engine.device)[None, :]
                logits = self.engine.model(input_ids=ids, position_ids=positions, cache=cache, use_cache=True,
                                           logits_to_keep=1).logits[:, -1]
            if done + len(chunk) < row.prompt_tokens:
                self.chunking.append((row, cache))
                return []
            row.input_ids = None
            return self._first_tokens([row], logits, cache)
        except Exception as exc:
            return _failed([row], exc)

    def _first_tokens(self, group: list[BatchRow], logits: torch.Tensor,
                      cache: DynamicCache) -> list[tuple[BatchRow, Chunk]]:
        """The prefilled `group`'s first tokens from its last positions' `logits`; who stays joins."""
        sampler = TokenSampler([row.params for row in group], self.engine.device, [row.generator for row in group])
        tokens = sampler.pick(mask_logits(logits, [row.constraint for row in group]))
        out: list[tuple[BatchRow, Chunk]] = []
        staying = []
        for index, (row, token_id) in enumerate(zip(group, tokens, strict=True)):
            chunks = self._accept(row, token_id)
            out.extend((row, chunk) for chunk in chunks)
            if not isinstance(chunks[-1], Finish):
                staying.append((index, row))
        if staying:
            self._store(staying, cache)
        return out

    @torch.inference_mode()
    def _prefill(self, group: list[BatchRow]) -> tuple[torch.Tensor, DynamicCache]:
        """One forward pass over the group's prompts, left-padded to the longest: the logits
        [rows, vocab] of each prompt's last token and their cache (each row's real positions
        last)."""
        device = self.engine.device
        longest = max(row.prompt_tokens for row in group)
        ids = torch.zeros((len(group), longest), dtype=torch.long, device=device)
        mask = torch.zeros((len(group), longest), dtype=torch.long, device=device)
        for i, row in enumerate(group):
            assert row.input_ids is not None
            ids[i, longest - row.prompt_tokens :] = torch.tensor(row.input_ids, dtype=torch.long)
            mask[i, longest - row.prompt_tokens :] = 1
            row.input_ids = None
        cache = DynamicCache(config=self.engine.config)
        if len(group) == 1:  # no padding: the plain pass, exactly as Engine.stream runs it
            logits = self.engine.model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1).logits
            return logits[:, -1], cache
        position_ids = (mask.cumsum(dim=1) - 1).clamp_(min=0)
        logits = self.engine.model(input_ids=ids, attention_mask=mask, position_ids=position_ids,
                                   cache=cache, use_cache=True, logits_to_keep=1).logits
        return logits[:, -1], cache

    @torch.inference_mode()
    def _store(self, staying: list[tuple[int, BatchRow]], prefilled: DynamicCache) -> None:
        """Put the prefilled rows that stay into the next free slots."""
        layers = _plain_layers(prefilled)
        rows = [row for _, row in staying]
        slots = len(self.rows) + len(rows)
        columns = max(row.length for row in [*self.rows, *rows]) + 1
        if not self.cache.allocated:
            self.cache.allocate_like(layers, slots, max(columns, min(self.FIRST_COLUMNS, self.columns)))
        self.cache.reserve(slots, columns)
        for slot, (index, row) in enumerate(staying, start=len(self.rows)):
            self.cache.store(slot, layers, index, row.prompt_tokens)
        self._set_rows([*self.rows, *rows])

    @torch.inference_mode()
    def _decode(self) -> torch.Tensor:
        """Logits [rows, vocab] for each row's pending token, written at its next column."""
        columns = [row.length for row in self.rows]
        self.cache.reserve(len(self.rows), max(columns) + 1)
        logits = self._step([[cast(int, row.pending_token)] for row in self.rows], [[c] for c in columns])[:, 0]
        for row in self.rows:
            row.length += 1
        return logits

    @torch.inference_mode()
    def _drop(self, leaving: set[BatchRow]) -> None:
        """Remove rows from the batch: each hole below the new end takes a row from above it."""
        if not leaving:
            return
        kept = [row for row in self.rows if row not in leaving]
        end = len(kept)
        movers = [slot for slot in range(end, len(self.rows)) if self.rows[slot] not in leaving]
        rows = self.rows[:end]
        for hole, source in zip([s for s in range(end) if rows[s] in leaving], movers, strict=True):
            self.cache.move(source, hole, self.rows[source].length)
            rows[hole] = self.rows[source]
        self._set_rows(rows)


def _failed(group: list[BatchRow], exc: Exception) -> list[tuple[BatchRow, Chunk]]:
    """A prefill that raised fails its rows alone (the running batch is untouched)."""
    log.exception("Prefill of %d requests failed", len(group))
    reason = f"The model failed while generating: {(str(exc).strip().splitlines() or [type(exc).__name__])[0]}"
    return [(row, Failure(reason, protocol.ENGINE_ERROR)) for row in group]


def _bucket_up(rows: int) -> int:
    """The captured batch size that holds `rows`."""
    return next((b for b in BATCH_BUCKETS if b >= rows), BATCH_BUCKETS[-1])


def _plain_layers(cache: DynamicCache) -> list[DynamicLayer]:
    """A newcomer's prefilled layers, all plain DynamicLayers (Engine.supports_batching admits no other kind)."""
    return cast(list[DynamicLayer], cache.layers)
