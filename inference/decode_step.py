"""The one-token forward pass of a running batch over its SlotCache, eager or replayed.

`decode_forward` is the step itself: rows 0..n-1 of the cache, each feeding its pending
token at its own column (= its position id), attending to columns 0..its own. Its shapes
depend only on (rows, span), so on a CUDA device `GraphStep` captures it once per bucket
(rows padded up to 1, 2, 4, 8, 16, 32; span up to a power of two) when the worker starts
and replays it every token: one launch instead of a thousand or more kernels issued from
Python, which is what a small model or a big batch is bound by on a GPU. Sampling runs on
the device right after it (inference.engine.TokenSampler: one read-back for all rows).

`EagerStep` runs the same function directly: the CPU, and any model whose forward cannot
be captured (the reason is kept and shown on the worker's status).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import torch

from inference.slots import DecodeView, PrefillView, SlotCache

log = logging.getLogger(__name__)

BATCH_BUCKETS = (1, 2, 4, 8, 16, 32)
MIN_SPAN = 256  # the shortest captured span: below it the attention's columns cost nothing


def attention_mask(allowed: torch.Tensor, config, dtype: torch.dtype) -> torch.Tensor:
    """A prepared 4D mask [rows, 1, queries, keys] from `allowed` (bool) in the form the model's
    attention reads: bool for SDPA and the fused kernels, additive (0 / -inf) for eager."""
    mask = allowed[:, None, :, :]
    if getattr(config, "_attn_implementation", "sdpa") == "eager":
        return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(~mask, torch.finfo(dtype).min)
    return mask


def decode_forward(model, cache: SlotCache, input_ids: torch.Tensor, columns: torch.Tensor, span: int) -> torch.Tensor:
    """Logits [rows, vocab] for each row's token `input_ids[row, 0]` written at `columns[row]`."""
    cache.view = DecodeView(rows=input_ids.shape[0], span=span, columns=columns)
    allowed = torch.arange(span, device=columns.device)[None, :] <= columns[:, None]
    mask = attention_mask(allowed[:, None, :], model.config, model.dtype)
    out = model(input_ids=input_ids, position_ids=columns[:, None], attention_mask=mask, cache=cache, use_cache=True)
    return out.logits[:, -1]


def prefill_forward(model, cache: SlotCache, slot: int, input_ids: torch.Tensor, start: int) -> torch.Tensor:
    """One row's prompt tokens [1, n] written into `slot` from column `start` (a chunk of a long
    prompt): the logits [1, vocab] of its last token."""
    cache.view = PrefillView(slot=slot, start=start)
    n = input_ids.shape[1]
    device = input_ids.device
    queries = torch.arange(start, start + n, device=device)
    allowed = torch.arange(start + n, device=device)[None, :] <= queries[:, None]
    mask = attention_mask(allowed[None], model.config, model.dtype)
    out = model(input_ids=input_ids, position_ids=queries[None, :], attention_mask=mask, cache=cache,
                use_cache=True, logits_to_keep=1)
    return out.logits[:, -1]


class EagerStep:
    """The step run directly, its span exactly the longest row's."""

    def __init__(self, model, cache: SlotCache, device: torch.device, reason: str):
        self.model, self.cache, self.device = model, cache, device
        self.description = f"eager ({reason})"

    def __call__(self, tokens: Sequence[int], columns: Sequence[int]) -> torch.Tensor:
        inputs = torch.tensor([list(tokens), list(columns)], dtype=torch.long, device=self.device)
        return decode_forward(self.model, self.cache, inputs[0][:, None], inputs[1], max(columns) + 1)


def _bucket(value: int, buckets: Sequence[int]) -> int:
    return next(b for b in buckets if b >= value)


def span_buckets(columns: int) -> tuple[int, ...]:
    """Spans captured for a cache of `columns` usable columns: powers of two from MIN_SPAN, and `columns`."""
    spans, span = [], MIN_SPAN
    while span < columns:
        spans.append(span)
        span *= 2
    return (*spans, columns)


class GraphStep:
    """The step captured as a CUDA graph per (rows bucket, span bucket) and replayed.

    `compiled`: the step is first compiled by torch.compile (inductor fuses the small
    element-wise kernels a transformer layer is made of: norms, rotary embeddings,
    activations), once for every bucket (dynamic shapes; one row is its own case), and the
    compiled code is what each graph captures; its artefacts stay in inductor's on-disk
    cache, so a worker that starts again finds them. If compiling fails, the plain step is
    captured instead (the reason kept in `description`).

    Padding rows (beyond the real ones, up to the bucket) feed token 0 at the cache's padding
    column, which no row holds and no span reaches. Every graph shares one memory pool:
    a graph's logits are read before the next replay overwrites them.
    """

    def __init__(self, model, cache: SlotCache, device: torch.device, max_rows: int, *, compiled: bool = False):
        self.model, self.cache, self.device = model, cache, device
        self.batches = (*tuple(b for b in BATCH_BUCKETS if b < max_rows), _bucket(max_rows, BATCH_BUCKETS))
        self.spans = span_buckets(cache.columns)
        self.graphs: dict[tuple[int, int], tuple[torch.cuda.CUDAGraph, torch.Tensor, torch.Tensor]] = {}
        self.forward = self._plain
        self.compiled = False
        self.compile_note = ""
        started = time.perf_counter()
        if compiled:
            self._compile()
        self._capture_all()
        self.capture_s = time.perf_counter() - started
        how = "torch.compile'd " if self.compiled else ""
        self.description = (f"CUDA graphs of {how}decode steps: {len(self.graphs)} captured in {self.capture_s:.1f} s "
                            f"(rows {self.batches[0]}-{self.batches[-1]}, spans {self.spans[0]}-{self.spans[-1]})"
                            f"{self.compile_note}")

    def _plain(self, input_ids: torch.Tensor, columns: torch.Tensor, probe: torch.Tensor) -> torch.Tensor:
        """The step, its span given by `probe`'s length (a shape, so a compiled step reads it as dynamic)."""
        return decode_forward(self.model, self.cache, input_ids, columns, probe.shape[0])

    @torch.inference_mode()
    def _compile(self) -> None:
        """Compile the step on the smallest and a larger bucket (one row is always its own graph)."""
        compiled = torch.compile(self._plain, dynamic=True)
        try:
            for rows in sorted({self.batches[0], self.batches[-1]}):
                inputs = self._inputs(rows)
                compiled(inputs[0][:, None], inputs[1], self._probe(self.spans[0]))
            torch.cuda.synchronize(self.device)
        except Exception as exc:  # an unsupported op or a compiler failure: the plain step still captures
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            log.warning("Decode step not compiled, capturing it plain: %s", reason)
            self.compile_note = f"; not compiled: {reason}"
            return
        self.forward, self.compiled = compiled, True

    def _inputs(self, rows: int) -> torch.Tensor:
        inputs = torch.zeros((2, rows), dtype=torch.long, device=self.device)
        inputs[1].fill_(self.cache.pad_column)
        return inputs

    def _probe(self, span: int) -> torch.Tensor:
        return torch.empty(span, dtype=torch.int8, device=self.device)

    @torch.inference_mode()
    def _capture_all(self) -> None:
        pool = torch.cuda.graph_pool_handle()
        side = torch.cuda.Stream(self.device)
        for rows in reversed(self.batches):  # largest first: the smaller ones fit in its pool
            for span in reversed(self.spans):
                inputs, probe = self._inputs(rows), self._probe(span)
                side.wait_stream(torch.cuda.current_stream(self.device))
                with torch.cuda.stream(side):  # warm up (cuBLAS handles, autotuning) off the capture
                    self.forward(inputs[0][:, None], inputs[1], probe)
                torch.cuda.current_stream(self.device).wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, pool=pool):
                    logits = self.forward(inputs[0][:, None], inputs[1], probe)
                self.graphs[(rows, span)] = (graph, inputs, logits)
        torch.cuda.synchronize(self.device)

    def __call__(self, tokens: Sequence[int], columns: Sequence[int]) -> torch.Tensor:
        rows, span = _bucket(len(tokens), self.batches), _bucket(max(columns) + 1, self.spans)
        graph, inputs, logits = self.graphs[(rows, span)]
        inputs.copy_(padded(tokens, columns, rows, self.cache.pad_column), non_blocking=True)
        graph.replay()
        return logits[: len(tokens)]


def padded(tokens: Sequence[int], columns: Sequence[int], rows: int, pad_column: int) -> torch.Tensor:
    """[2, rows]: the real rows' tokens and columns, then padding rows' (token 0 at `pad_column`)."""
    padding = rows - len(tokens)
    return torch.tensor([[*tokens, *[0] * padding], [*columns, *[pad_column] * padding]], dtype=torch.long)


def make_step(model, cache: SlotCache, device: torch.device, max_rows: int, *, graphs: bool, compiled: bool = False):
    """A GraphStep on a CUDA device when `graphs` (compiled first when `compiled`); else, or if
    capture fails, an EagerStep."""
    if device.type != "cuda":
        return EagerStep(model, cache, device, f"no CUDA graphs on {device.type}")
    if not graphs:
        return EagerStep(model, cache, device, "CUDA graphs turned off (ARENA_CUDA_GRAPHS=0)")
    try:
        return GraphStep(model, cache, device, max_rows, compiled=compiled)
    except Exception as exc:  # a forward that cannot be captured: decoding still works, eagerly
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        log.warning("Decode steps not captured, running eagerly: %s", reason)
        torch.cuda.synchronize(device)
        return EagerStep(model, cache, device, f"capture failed: {reason}")
