"""Continuous batching: many generations interleaved in one decode loop.

`BatchedDecoder` keeps one running batch over a plain `Engine`'s model. Its rows
are requests at different positions. A newcomer waits for the next `step`, which
prefills every newcomer of similar length in one left-padded forward pass, then
their KV caches join the batch's, everything left-padded to a common length, with an
attention mask hiding the padding and per-row position ids counting only real
tokens, so each row computes what it would alone. Finished or cancelled rows leave
at once, and the padding every remaining row shares is trimmed away.

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
    TokenChunk,
)
from inference.constrained import mask_logits
from inference.decoding import StopText
from inference.engine import Engine, IncrementalDetokenizer, TokenSampler, sampling_generator
from inference.protocol import SamplingParams

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

    The batch's keys and values live in buffers with room to grow (`BatchLayer`), so a
    step writes its new position in place; only a join, a leaving row or a full buffer
    (which doubles) copies them. `min_spare` is the least room a new buffer gets.
    """

    MIN_SPARE = 64
    # Newcomers share a prefill pass while its padded size stays within this factor of their
    # real tokens: a pass over many prompts costs less per token than one per prompt
    # (measured on 2 cores, 16 prompts of 45 tokens: ~25% less when idle, 4x less when the
    # cores are contended), unless the padding eats that up.
    PREFILL_PADDING = 1.5
    PREFILL_MAX_TOKENS = 16384  # padded tokens in one prefill pass: bounds its activations

    def __init__(self, engine: Engine, *, min_spare: int = MIN_SPARE):
        if not engine.supports_batching:
            raise ValueError(f"{type(engine).__name__} cannot run in a batch")
        self.engine = engine
        self.min_spare = max(1, min_spare)
        self.rows: list[BatchRow] = []  # running: in the cache, in its row order
        self.waiting: list[BatchRow] = []  # joined, to be prefilled by the next step
        self.cache: DynamicCache | None = None
        self._mask_buffer: torch.Tensor | None = None  # [rows, capacity]: 1 real token, 0 padding or room
        self.sampler = TokenSampler([], engine.device)
        self.length = 0  # positions (columns) of the cache in use, padding included

    @property
    def mask(self) -> torch.Tensor | None:
        """[rows, cache length]: 1 for a real token, 0 for padding."""
        return None if self._mask_buffer is None else self._mask_buffer[:, : self.length]

    @property
    def capacity(self) -> int:
        """Positions the cache buffers hold before they must grow."""
        return 0 if self._mask_buffer is None else self._mask_buffer.shape[1]

    def __len__(self) -> int:
        return len(self.rows) + len(self.waiting)

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
        row = BatchRow(self.engine, input_ids, params, tag)
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
        for group in self._prefill_groups():
            out.extend(self._admit(group))
        return out

    def cancel(self, rows: Sequence[BatchRow]) -> list[tuple[BatchRow, Finish]]:
        """Take `rows` out of the batch (or the newcomers) now, each with a Finish(FINISH_CANCELLED)."""
        waiting = [row for row in rows if row in self.waiting]
        self.waiting = [row for row in self.waiting if row not in waiting]
        leaving = [row for row in rows if row in self.rows]
        self._drop(set(leaving))
        return [(row, self._end(row, FINISH_CANCELLED)) for row in waiting + leaving]

    def reset(self) -> None:
        """Forget every row (after a failed forward pass, whose cache is in no known state)."""
        self.waiting = []
        self._empty()

    def _empty(self) -> None:
        """No running rows, no cache (newcomers still wait)."""
        self._set_rows([])
        self.cache, self._mask_buffer, self.length = None, None, 0

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
        """The batch's rows, in cache order, and a sampler for exactly these."""
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
            logits, cache, mask = self._prefill(group)
            sampler = TokenSampler([row.params for row in group], self.engine.device, [row.generator for row in group])
            tokens = sampler.pick(mask_logits(logits, [row.constraint for row in group]))
        except Exception as exc:
            log.exception("Prefill of %d requests failed", len(group))
            reason = f"The model failed while generating: {(str(exc).strip().splitlines() or [type(exc).__name__])[0]}"
            return [(row, Failure(reason, protocol.ENGINE_ERROR)) for row in group]
        out: list[tuple[BatchRow, Chunk]] = []
        staying = []
        for index, (row, token_id) in enumerate(zip(group, tokens, strict=True)):
            chunks = self._accept(row, token_id)
            out.extend((row, chunk) for chunk in chunks)
            if not isinstance(chunks[-1], Finish):
                staying.append(index)
        if staying:
            self._merge([group[i] for i in staying], cache, mask, staying)
        return out

    @torch.inference_mode()
    def _prefill(self, group: list[BatchRow]) -> tuple[torch.Tensor, DynamicCache, torch.Tensor]:
        """One forward pass over the group's prompts, left-padded to the longest: the logits
        [rows, vocab] of each prompt's last token, the cache (padding positions zeroed) and
        the mask [rows, longest]."""
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
            return logits[:, -1], cache, mask
        position_ids = (mask.cumsum(dim=1) - 1).clamp_(min=0)
        logits = self.engine.model(input_ids=ids, attention_mask=mask, position_ids=position_ids,
                                   cache=cache, use_cache=True, logits_to_keep=1).logits
        real = mask.bool()[:, None, :, None]
        for layer in _plain_layers(cache):  # a padding query attends to nothing: its keys may be NaN
            keys, values = _kv(layer)
            layer.keys = torch.where(real, keys, 0.0)
            layer.values = torch.where(real, values, 0.0)
        return logits[:, -1], cache, mask

    @torch.inference_mode()
    def _decode(self) -> torch.Tensor:
        """Logits [rows, vocab] for each row's pending token."""
        device = self.engine.device
        cache, mask_buffer = self._running()
        if self.length == self.capacity:
            cache, mask_buffer = self._grow()
        mask_buffer[:, self.length] = 1
        input_ids = torch.tensor([[row.pending_token] for row in self.rows], dtype=torch.long, device=device)
        position_ids = torch.tensor([[row.length] for row in self.rows], dtype=torch.long, device=device)
        logits = self.engine.model(
            input_ids=input_ids,
            attention_mask=mask_buffer[:, : self.length + 1],
            position_ids=position_ids,
            cache=cache,
            use_cache=True,
        ).logits
        self.length += 1
        for row in self.rows:
            row.length += 1
        return logits[:, -1]

    def _room(self, length: int) -> int:
        """Capacity for `length` positions: double, at least min_spare more, at most the context."""
        return max(length, min(length + max(length, self.min_spare), self.engine.context_length))

    def _grow(self) -> tuple[DynamicCache, torch.Tensor]:
        """The buffers are full: copy them into ones twice the size (a step that needs it pays once)."""
        cache, mask_buffer = self._running()
        capacity = self._room(self.length + 1)
        for layer in _layers(cache):
            layer.resize(capacity, self.length)
        self._mask_buffer = _resized(mask_buffer, capacity, self.length)
        return cache, self._mask_buffer

    def _merge(self, rows: list[BatchRow], cache: DynamicCache, mask: torch.Tensor, index: list[int]) -> None:
        """Append `rows` (rows `index` of a prefilled `cache` and its `mask`) to the batch,
        left-padding the shorter side."""
        device = self.engine.device
        if len(index) < mask.shape[0]:
            picked = torch.tensor(index, dtype=torch.long, device=device)
            mask = mask.index_select(0, picked)
            for layer in _plain_layers(cache):
                keys, values = _kv(layer)
                layer.keys, layer.values = keys.index_select(0, picked), values.index_select(0, picked)
        new_length = mask.shape[1]
        length = max(self.length, new_length)
        capacity = self._room(length + 1)
        batch_mask = torch.zeros((len(self.rows) + len(rows), capacity), dtype=torch.long, device=device)
        batch_mask[len(self.rows) :, length - new_length : length] = mask
        batch_layers: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(cache.layers)
        if self.rows:
            batch_cache, old_mask = self._running()
            batch_mask[: len(self.rows), length - self.length : length] = old_mask[:, : self.length]
            batch_layers = [_kv(layer) for layer in _layers(batch_cache)]
        layers = [BatchLayer.merged(batch_kv, _kv(new_layer), length, capacity)
                  for batch_kv, new_layer in zip(batch_layers, _plain_layers(cache), strict=True)]
        cache.layers = cast(list, layers)  # the newcomers' cache object carries the whole batch from now on
        self.cache, self._mask_buffer, self.length = cache, batch_mask, length
        self._set_rows([*self.rows, *rows])

    def _drop(self, leaving: set[BatchRow]) -> None:
        """Remove rows from the batch, then the left padding that all remaining rows share."""
        if not leaving:
            return
        keep = [i for i, row in enumerate(self.rows) if row not in leaving]
        if not keep:
            self._empty()
            return
        cache, mask_buffer = self._running()
        index = torch.tensor(keep, dtype=torch.long, device=self.engine.device)
        rows = [self.rows[i] for i in keep]
        length = max(row.length for row in rows)
        shared_padding = self.length - length
        capacity = self._room(length + 1)
        for layer in _layers(cache):
            layer.select(index, shared_padding, self.length, capacity)
        mask = mask_buffer.new_zeros((len(keep), capacity))
        mask[:, :length] = mask_buffer.index_select(0, index)[:, shared_padding : self.length]
        self._mask_buffer, self.length = mask, length
        self._set_rows(rows)

    def _running(self) -> tuple[DynamicCache, torch.Tensor]:
        """The batch's cache and mask buffer, which exist while it has rows."""
        assert self.cache is not None and self._mask_buffer is not None, "the batch has no rows"
        return self.cache, self._mask_buffer


class BatchLayer(DynamicLayer):
    """One layer's keys and values for the whole batch, [rows, heads, capacity, head dim].

    `keys` and `values` are views of the first `length` positions, as a DynamicLayer's
    are its whole tensors; `update` writes the step's new position into the room after
    them instead of concatenating (a copy of the whole layer per step). The decoder
    makes room first (`resize`); every layer of a batch has the same length.
    """

    def __init__(self, key_buffer: torch.Tensor, value_buffer: torch.Tensor, length: int):
        super().__init__()
        self.key_buffer, self.value_buffer = key_buffer, value_buffer
        self.dtype, self.device = key_buffer.dtype, key_buffer.device
        self.is_initialized = True
        self._view(length)

    @classmethod
    def merged(cls, batch: tuple[torch.Tensor, torch.Tensor] | None, new: tuple[torch.Tensor, torch.Tensor],
               length: int, capacity: int) -> BatchLayer:
        """The batch's keys and values (if any) with `new` as rows below, each right-aligned at `length`."""
        new_keys, new_values = new
        rows = new_keys.shape[0] + (0 if batch is None else batch[0].shape[0])
        buffers = []
        for index, new_tensor in enumerate((new_keys, new_values)):
            heads, head_dim = new_tensor.shape[1], new_tensor.shape[3]
            buffer = new_tensor.new_zeros((rows, heads, capacity, head_dim))
            if batch is not None:
                old = batch[index]
                buffer[: old.shape[0], :, length - old.shape[2] : length] = old
            buffer[rows - new_tensor.shape[0] :, :, length - new_tensor.shape[2] : length] = new_tensor
            buffers.append(buffer)
        return cls(buffers[0], buffers[1], length)

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        start = self.length
        end = start + key_states.shape[-2]
        assert end <= self.key_buffer.shape[2], "BatchedDecoder makes room before every step"
        self.key_buffer[:, :, start:end] = key_states
        self.value_buffer[:, :, start:end] = value_states
        self._view(end)
        return self.keys, self.values

    def resize(self, capacity: int, length: int) -> None:
        """Copy the first `length` positions into buffers of `capacity`."""
        self.key_buffer = _resized(self.key_buffer, capacity, length, dim=2)
        self.value_buffer = _resized(self.value_buffer, capacity, length, dim=2)
        self._view(length)

    def select(self, index: torch.Tensor, start: int, end: int, capacity: int) -> None:
        """Keep rows `index` and positions [start, end), at the front of new buffers of `capacity`."""
        for name in ("key_buffer", "value_buffer"):
            old = getattr(self, name)
            buffer = old.new_zeros((index.shape[0], old.shape[1], capacity, old.shape[3]))
            buffer[:, :, : end - start] = old.index_select(0, index)[:, :, start:end]
            setattr(self, name, buffer)
        self._view(end - start)

    def _view(self, length: int) -> None:
        self.length = length
        self.keys = self.key_buffer[:, :, :length]
        self.values = self.value_buffer[:, :, :length]


def _resized(buffer: torch.Tensor, capacity: int, length: int, dim: int = 1) -> torch.Tensor:
    """A zeroed buffer of `capacity` along `dim` holding the first `length` positions of `buffer`."""
    shape = list(buffer.shape)
    shape[dim] = capacity
    out = buffer.new_zeros(shape)
    out.narrow(dim, 0, length).copy_(buffer.narrow(dim, 0, length))
    return out


def _layers(cache: DynamicCache) -> list[BatchLayer]:
    """The running batch's layers (`_merge` puts BatchLayers in), as a type the checker can follow."""
    return cast(list[BatchLayer], cache.layers)


def _plain_layers(cache: DynamicCache) -> list[DynamicLayer]:
    """A newcomer's prefilled layers, all plain DynamicLayers (Engine.supports_batching admits no other kind)."""
    return cast(list[DynamicLayer], cache.layers)


def _kv(layer: DynamicLayer) -> tuple[torch.Tensor, torch.Tensor]:
    """A layer's keys and values, which every layer holds once a prompt has gone through it."""
    assert layer.keys is not None and layer.values is not None, "an empty cache layer in a running batch"
    return layer.keys, layer.values

