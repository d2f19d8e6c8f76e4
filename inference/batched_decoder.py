"""Continuous batching: many generations interleaved in one decode loop.

`BatchedDecoder` keeps one running batch over a plain `Engine`'s model. Its rows
are requests at different positions: a newcomer is prefilled on its own, then its
KV cache joins the batch's, everything left-padded to a common length, with an
attention mask hiding the padding and per-row position ids counting only real
tokens, so each row computes what it would alone. Finished or cancelled rows leave
at once, and the padding every remaining row shares is trimmed away.

Tensor work only, no Redis: `inference.scheduler` feeds it jobs and writes their
events (it is one `inference.decoding.Decoder`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, cast

import torch
import torch.nn.functional as F
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from inference.chunks import FINISH_CANCELLED, FINISH_LENGTH, FINISH_STOP, Chunk, Finish, TokenChunk
from inference.decoding import StopText
from inference.engine import NUCLEUS_FAST_K, Engine, IncrementalDetokenizer, sampling_generator
from inference.protocol import SamplingParams


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
        cache = DynamicCache(config=self.engine.config)
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

    def reset(self) -> None:
        """Forget every row (after a failed forward pass, whose cache is in no known state)."""
        self.rows, self.cache, self.mask = [], None, None

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
        cache, mask = self._running()
        input_ids = torch.tensor([[row.pending_token] for row in self.rows], dtype=torch.long, device=device)
        position_ids = torch.tensor([[row.length] for row in self.rows], dtype=torch.long, device=device)
        self.mask = torch.cat([mask, mask.new_ones((len(self.rows), 1))], dim=1)
        logits = self.engine.model(
            input_ids=input_ids,
            attention_mask=self.mask,
            position_ids=position_ids,
            past_key_values=cache,
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
        batch_cache, mask = self._running()
        length = max(mask.shape[1], row.length)
        for batch_layer, new_layer in zip(_layers(batch_cache), _layers(cache), strict=True):
            (keys, values), (new_keys, new_values) = _kv(batch_layer), _kv(new_layer)
            batch_layer.keys = _cat_left_padded(keys, new_keys, length)
            batch_layer.values = _cat_left_padded(values, new_values, length)
        self.mask = torch.cat([_left_pad(mask, length), _left_pad(new_mask, length)], dim=0)
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
        cache, mask = self._running()
        index = torch.tensor(keep, dtype=torch.long, device=self.engine.device)
        shared_padding = mask.shape[1] - max(row.length for row in self.rows)
        for layer in _layers(cache):
            keys, values = _kv(layer)
            layer.keys = keys.index_select(0, index)[:, :, shared_padding:]
            layer.values = values.index_select(0, index)[:, :, shared_padding:]
        self.mask = mask.index_select(0, index)[:, shared_padding:]

    def _running(self) -> tuple[DynamicCache, torch.Tensor]:
        """The batch's cache and mask, which exist while it has rows."""
        assert self.cache is not None and self.mask is not None, "the batch has no rows"
        return self.cache, self.mask


def _layers(cache: DynamicCache) -> list[DynamicLayer]:
    """The cache's layers, all plain DynamicLayers with keys and values (Engine.supports_batching
    admits no other kind), as a type the checker can follow."""
    return cast(list[DynamicLayer], cache.layers)


def _kv(layer: DynamicLayer) -> tuple[torch.Tensor, torch.Tensor]:
    """A layer's keys and values, which every layer holds once a prompt has gone through it."""
    assert layer.keys is not None and layer.values is not None, "an empty cache layer in a running batch"
    return layer.keys, layer.values


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
