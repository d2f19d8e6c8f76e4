"""The forward pass of a running batch over its SlotCache, eager or replayed.

`decode_forward` is the step itself: rows 0..n-1 of the cache, each feeding a fixed number
of tokens (`queries`: one for the batched decoder; the last token and k proposals for a
speculative verify, inference.speculative) at its own columns (= their position ids), each
attending to columns 0..its own. Its shapes depend only on (rows, queries, span), so on a
CUDA device `GraphStep` captures it once per bucket (rows padded up to 1, 2, 4, 8, 16, 32;
span up to a power of two) when the worker starts and replays it every step: one launch
instead of a thousand or more kernels issued from Python, which is what a small model or a
big batch is bound by on a GPU. Sampling runs on the device right after it
(inference.engine.TokenSampler: one read-back for all rows).

`EagerStep` runs the same function directly: the CPU, and any model whose forward cannot
be captured (the reason is kept and shown on the worker's status).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from typing import cast

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from inference.slots import DecodeView, PrefillView, SlotCache, SlotLayer

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


def decode_forward(model, cache: SlotCache, input_ids: torch.Tensor, columns: torch.Tensor,
                   positions: torch.Tensor) -> torch.Tensor:
    """Logits [rows, queries, vocab] for the tokens `input_ids` [rows, queries] written at
    `columns` [rows, queries], each attending to `positions` (0..span-1, on the device) up to
    its own column."""
    cache.view = DecodeView(columns=columns, span_probe=positions)
    allowed = positions[None, None, :] <= columns[:, :, None]
    mask = attention_mask(allowed, model.config, model.dtype)
    return model(input_ids=input_ids, position_ids=columns, attention_mask=mask, cache=cache, use_cache=True).logits


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


@torch.inference_mode()
def probe_layers(model, device: torch.device) -> list[DynamicLayer]:
    """A one-token pass's cache layers: what a SlotCache's buffers are shaped after."""
    probe = DynamicCache(config=model.config)
    model(input_ids=torch.zeros((1, 1), dtype=torch.long, device=device), cache=probe, use_cache=True,
          logits_to_keep=1)
    return cast(list[DynamicLayer], probe.layers)


def allocate_fixed(cache: SlotCache, model, device: torch.device, memory_fraction: float) -> None:
    """Allocate a fixed cache's slots at their full size, their columns bounded by
    `memory_fraction` of the device's free memory."""
    layers = probe_layers(model, device)
    per_column = 0
    for layer in layers:
        assert layer.keys is not None and layer.values is not None, "an empty layer after a pass"
        per_column += (layer.keys[0, :, 0].numel() + layer.values[0, :, 0].numel()) * layer.keys.element_size()
    free, _ = torch.cuda.mem_get_info(device)
    fits = int(free * memory_fraction) // (per_column * cache.max_slots) - 1  # and the padding column
    columns = min(cache.max_columns, fits)
    if columns < 2:
        raise MemoryError(f"no room for {cache.max_slots} rows of KV cache on {device}")
    if columns < cache.max_columns:
        log.info("KV slots: %d rows x %d positions (the model allows %d)", cache.max_slots, columns,
                 cache.max_columns)
    cache.max_columns = columns
    cache.allocate_like(layers, cache.max_slots, columns)


Rows = Sequence[Sequence[int]]  # a step's tokens or columns: one list of `queries` per row


class EagerStep:
    """The step run directly, its span exactly the furthest column's."""

    def __init__(self, model, cache: SlotCache, device: torch.device, reason: str):
        self.model, self.cache, self.device = model, cache, device
        self.description = f"eager ({reason})"

    def __call__(self, tokens: Rows, columns: Rows) -> torch.Tensor:
        """Logits [rows, queries, vocab]."""
        inputs = torch.tensor([tokens, columns], dtype=torch.long, device=self.device)
        positions = torch.arange(max(map(max, columns)) + 1, device=self.device)
        return decode_forward(self.model, self.cache, inputs[0], inputs[1], positions)


def _bucket(value: int, buckets: Sequence[int]) -> int:
    return next(b for b in buckets if b >= value)


def span_buckets(columns: int) -> tuple[int, ...]:
    """Spans captured for a cache of `columns` usable columns: powers of two from MIN_SPAN, and `columns`."""
    spans, span = [], MIN_SPAN
    while span < columns:
        spans.append(span)
        span *= 2
    return (*spans, columns)


class _LayerCache:
    """What a compiled decoder layer sees of the SlotCache: its own SlotLayer, whatever index the
    layer passes. The index is then no constant of the compiled code, so one compiled code
    serves every layer instead of one compile per layer."""

    def __init__(self, layer: SlotLayer):
        self.layer = layer

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        return self.layer.update(key_states, value_states)


def _run_layer(layer: torch.nn.Module, hidden_states: torch.Tensor, cache: _LayerCache, kwargs: dict):
    return layer(hidden_states, cache=cache, **kwargs)


class _CompiledLayer(torch.nn.Module):
    """A decoder layer run through the one compiled `_run_layer`, with its own `_LayerCache`."""

    def __init__(self, layer: torch.nn.Module, cache: _LayerCache, run):
        super().__init__()
        self.layer, self.layer_cache, self.run = layer, cache, run

    def forward(self, hidden_states: torch.Tensor, cache=None, **kwargs):
        return self.run(self.layer, hidden_states, self.layer_cache, kwargs)


@contextlib.contextmanager
def compiled_layers(model, cache: SlotCache) -> Iterator[None]:
    """The model's decoder layers swapped for compiled ones while the block runs, then put back.

    Regional compilation (PyTorch's recipe for repeated blocks): the layers are alike, so
    torch.compile (inductor, dynamic shapes) compiles one layer's code once (twice: one row is
    its own case) and every layer reuses it; a whole-model compile took 318 s cold on an H200
    (docs/performance.md). Only the capture needs the compiled code: a replayed graph runs
    kernels, not Python, so the model itself stays eager for prefill and every other path."""
    layers = model.get_decoder().layers
    originals = list(layers)
    if len(originals) != len(cache.slot_layers):
        raise RuntimeError(f"{len(originals)} decoder layers for {len(cache.slot_layers)} cache layers")
    for i, layer in enumerate(originals):
        if getattr(getattr(layer, "self_attn", None), "layer_idx", i) != i:
            raise RuntimeError(f"decoder layer {i} keeps its keys in another layer's cache")
    run = torch.compile(_run_layer, dynamic=True)
    for i, (layer, slot_layer) in enumerate(zip(originals, cache.slot_layers, strict=True)):
        for buffer in slot_layer._buffers():  # fixed sizes: else a size equal to the rows' ties the two
            torch._dynamo.mark_static(buffer)
        layers[i] = _CompiledLayer(layer, _LayerCache(slot_layer), run)
    # Compiled with freezing and autotuning off whatever another library set (GPTQModel's CPU AWQ
    # kernel turns both on for the process): frozen weights would be constants, one compile a layer.
    # Every decoder of a process (a bench builds several) adds its two compiled codes to the same
    # function's: room for more than dynamo's default 8 before it would quietly run the layer eagerly.
    import torch._inductor.config as inductor_config

    try:
        with inductor_config.patch(freezing=False, max_autotune=False), torch._dynamo.config.patch(recompile_limit=64):
            yield
    finally:
        for i, layer in enumerate(originals):
            layers[i] = layer


def compiled_graph_count() -> int:
    """How many graphs torch.compile has made in this process (a recompile per layer would show here)."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


class GraphStep:
    """The step captured as a CUDA graph per (rows bucket, span bucket) and replayed.

    `compiled`: the decoder layers are also compiled (`compiled_layers`: inductor fuses the
    small element-wise kernels a layer is made of: norms, rotary embeddings, activations) and
    each rows bucket keeps whichever of its two graphs, plain or compiled, replays faster at
    the shortest span, timed at the start (measured on an H200: compiled steps are faster for
    one row, slower for 16 and 32 rows of an 8B model). Inductor's artefacts stay in its
    on-disk cache, so a worker that starts again finds them. If compiling fails, the plain
    graphs stay (the reason kept in `description`).

    Padding rows (beyond the real ones, up to the bucket) feed token 0 at the cache's padding
    column, which no row holds and no span reaches. Every graph shares one memory pool:
    a graph's logits are read before the next replay overwrites them.
    """

    TIMED_REPLAYS = 5  # a bucket's plain and compiled graphs are each replayed this often to choose

    def __init__(self, model, cache: SlotCache, device: torch.device, max_rows: int, *, queries: int = 1,
                 compiled: bool = False):
        self.model, self.cache, self.device, self.queries = model, cache, device, queries
        self.batches = (*tuple(b for b in BATCH_BUCKETS if b < max_rows), _bucket(max_rows, BATCH_BUCKETS))
        self.spans = span_buckets(cache.columns)
        self.positions = {span: torch.arange(span, device=device) for span in self.spans}
        self.graphs: dict[tuple[int, int], tuple[torch.cuda.CUDAGraph, torch.Tensor, torch.Tensor]] = {}
        self.compiled_rows: tuple[int, ...] = ()  # the rows buckets whose graphs run compiled code
        self.compile_note = ""
        self._compiled_graphs = 0
        self._pool = torch.cuda.graph_pool_handle()
        started = time.perf_counter()
        for rows in reversed(self.batches):  # largest first: the smaller ones fit in its pool
            for span in reversed(self.spans):
                self.graphs[(rows, span)] = self._capture(rows, span)
        if compiled:
            with contextlib.ExitStack() as layers:
                if self._compile(layers):
                    self._keep_faster_compiled()
        torch.cuda.synchronize(device)
        self.capture_s = time.perf_counter() - started
        self.description = (f"CUDA graphs of decode steps: {len(self.graphs)} captured in {self.capture_s:.1f} s "
                            f"(rows {self.batches[0]}-{self.batches[-1]}, spans {self.spans[0]}-{self.spans[-1]})"
                            f"{self.compile_note}")

    @property
    def compiled(self) -> bool:
        return bool(self.compiled_rows)

    def _step(self, inputs: torch.Tensor, span: int) -> torch.Tensor:
        return decode_forward(self.model, self.cache, inputs[0], inputs[1], self.positions[span])

    @torch.inference_mode()
    def _compile(self, layers: contextlib.ExitStack) -> bool:
        """Swap in compiled layers and compile them on the smallest and the largest bucket (one row
        is always its own case); on failure, put the plain layers back, say why, and False."""
        graphs_before = compiled_graph_count()
        try:
            layers.enter_context(compiled_layers(self.model, self.cache))
            for rows in sorted({self.batches[0], self.batches[-1]}):
                self._step(self._inputs(rows), self.spans[0])
            torch.cuda.synchronize(self.device)
        except Exception as exc:  # an unsupported op or a compiler failure: the plain graphs stay
            layers.close()
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            log.warning("Decode step not compiled, keeping the plain graphs: %s", reason)
            self.compile_note = f"; not compiled: {reason}"
            return False
        self._compiled_graphs = compiled_graph_count() - graphs_before
        return True

    @torch.inference_mode()
    def _keep_faster_compiled(self) -> None:
        """Per rows bucket, the compiled graphs where a compiled step replays faster than the plain one."""
        timings = []
        for rows in reversed(self.batches):
            span = self.spans[0]
            compiled = self._capture(rows, span)
            plain_ms, compiled_ms = self._replay_ms(self.graphs[(rows, span)][0]), self._replay_ms(compiled[0])
            timings.append(f"{rows}: {plain_ms:.2f}/{compiled_ms:.2f}")
            if compiled_ms < plain_ms:
                self.graphs[(rows, span)] = compiled
                for other in self.spans[1:]:
                    self.graphs[(rows, other)] = self._capture(rows, other)
                self.compiled_rows = (rows, *self.compiled_rows)
        which = ("rows " + ", ".join(map(str, self.compiled_rows))) if self.compiled_rows else "no rows"
        self.compile_note = f"; torch.compile'd for {which}, where faster"
        log.info("Decode steps: %d compiled graphs; ms a step, plain/compiled, by rows: %s", self._compiled_graphs,
                 "; ".join(reversed(timings)))

    def _replay_ms(self, graph: torch.cuda.CUDAGraph) -> float:
        graph.replay()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(self.TIMED_REPLAYS):
            graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / self.TIMED_REPLAYS

    def _inputs(self, rows: int) -> torch.Tensor:
        inputs = torch.zeros((2, rows, self.queries), dtype=torch.long, device=self.device)
        inputs[1].fill_(self.cache.pad_column)
        return inputs

    @torch.inference_mode()
    def _capture(self, rows: int, span: int) -> tuple[torch.cuda.CUDAGraph, torch.Tensor, torch.Tensor]:
        """One bucket's graph (with the model's layers as they are now), its inputs and its logits."""
        inputs = self._inputs(rows)
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):  # warm up (cuBLAS handles, autotuning) off the capture
            self._step(inputs, span)
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self._pool):
            logits = self._step(inputs, span)
        return graph, inputs, logits

    def __call__(self, tokens: Rows, columns: Rows) -> torch.Tensor:
        """Logits [rows, queries, vocab] (a view of the graph's output: read it before the next step)."""
        rows = _bucket(len(tokens), self.batches)
        span = _bucket(max(map(max, columns)) + 1, self.spans)
        graph, inputs, logits = self.graphs[(rows, span)]
        inputs.copy_(padded(tokens, columns, rows, self.cache.pad_column), non_blocking=True)
        graph.replay()
        return logits[: len(tokens)]


def padded(tokens: Rows, columns: Rows, rows: int, pad_column: int) -> torch.Tensor:
    """[2, rows, queries]: the real rows' tokens and columns, then padding rows' (token 0 at `pad_column`)."""
    padding = [[pad_column] * len(tokens[0])] * (rows - len(tokens))
    return torch.tensor([[*tokens, *[[0] * len(tokens[0])] * len(padding)], [*columns, *padding]], dtype=torch.long)


def make_step(model, cache: SlotCache, device: torch.device, max_rows: int, *, graphs: bool, compiled: bool = False,
              queries: int = 1):
    """A GraphStep of `queries` tokens a row on a CUDA device when `graphs` (compiled first when
    `compiled`); else, or if capture fails, an EagerStep."""
    if device.type != "cuda":
        return EagerStep(model, cache, device, f"no CUDA graphs on {device.type}")
    if not graphs:
        return EagerStep(model, cache, device, "CUDA graphs turned off (ARENA_CUDA_GRAPHS=0)")
    try:
        return GraphStep(model, cache, device, max_rows, queries=queries, compiled=compiled)
    except Exception as exc:  # a forward that cannot be captured: decoding still works, eagerly
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        log.warning("Decode steps not captured, running eagerly: %s", reason)
        torch.cuda.synchronize(device)
        return EagerStep(model, cache, device, f"capture failed: {reason}")
