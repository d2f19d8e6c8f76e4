"""The running batch's KV cache: one fixed slot per row, every layer preallocated.

A row's keys and values live in its slot, at columns 0.. in the order of its tokens, so a
column is also the token's position id. The batch's rows occupy slots 0..n-1 (a leaving row's
slot is filled by the last row's), so a decode step of n rows reads the first n slots, up to
a span of columns, through plain views: fixed shapes and fixed addresses, which is what a
captured CUDA graph replays (inference.decode_step). A step writes each row's new key at its
own column (`scatter_`); columns beyond a row's are hidden by the mask the step builds.

On a CUDA device the buffers are allocated once, at their full size (graphs hold their
addresses); elsewhere they start small and double as rows and lengths grow.

Tensor work only: transformers' model calls `update` through `Cache.update`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.cache_utils import Cache, CacheLayerMixin, DynamicLayer


@dataclass
class DecodeView:
    """What a decode step reads: the first `rows` slots, `span` columns, each row writing its
    tokens at `columns[row]` (one or more a row).

    Both counts are tensor shapes, not ints: a compiled layer (inference.decode_step) reads them
    as dynamic sizes instead of compiling itself again for every bucket."""

    columns: torch.Tensor  # [rows, queries] long, on the cache's device
    span_probe: torch.Tensor  # [span]: only its length is read

    @property
    def rows(self) -> int:
        return self.columns.shape[0]

    @property
    def span(self) -> int:
        return self.span_probe.shape[0]


@dataclass
class PrefillView:
    """What a prefill chunk of one row reads: slot `slot`, writing from column `start`."""

    slot: int
    start: int


class SlotLayer(CacheLayerMixin):
    """One layer's keys and values for every slot, [slots, heads, columns, head dim]."""

    is_compileable = True

    def __init__(self, cache: SlotCache):
        super().__init__()
        self.cache = cache
        self.key_buffer: torch.Tensor | None = None
        self.value_buffer: torch.Tensor | None = None

    def allocate(self, like_keys: torch.Tensor, like_values: torch.Tensor, slots: int, columns: int) -> None:
        """Buffers shaped after a prefilled layer's keys and values [*, heads, *, head dim]; `columns`
        includes the padding column."""
        self.key_buffer = like_keys.new_zeros((slots, like_keys.shape[1], columns, like_keys.shape[3]))
        self.value_buffer = like_values.new_zeros((slots, like_values.shape[1], columns, like_values.shape[3]))
        self.is_initialized = True

    def grow(self, slots: int, columns: int) -> None:
        """Copy the buffers into larger ones (never on a device whose steps are captured)."""
        for name in ("key_buffer", "value_buffer"):
            old = getattr(self, name)
            new = old.new_zeros((slots, old.shape[1], columns, old.shape[3]))
            new[: old.shape[0], :, : old.shape[2]] = old
            setattr(self, name, new)

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        raise RuntimeError("a SlotCache is allocated by its decoder before any forward pass")

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        keys, values = self._buffers()
        view = self.cache.view
        if isinstance(view, PrefillView):
            end = view.start + key_states.shape[2]
            keys[view.slot, :, view.start : end] = key_states[0]
            values[view.slot, :, view.start : end] = value_states[0]
            return keys[view.slot : view.slot + 1, :, :end], values[view.slot : view.slot + 1, :, :end]
        assert isinstance(view, DecodeView), "SlotCache.view is set before every forward pass"
        index = view.columns[:, None, :, None].expand(-1, keys.shape[1], -1, keys.shape[3])
        keys[: view.rows].scatter_(2, index, key_states)
        values[: view.rows].scatter_(2, index, value_states)
        return keys[: view.rows, :, : view.span], values[: view.rows, :, : view.span]

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        view = self.cache.view
        if isinstance(view, PrefillView):
            return view.start + query_length, 0
        assert view is not None
        return view.span, 0

    def get_seq_length(self) -> int:
        view = self.cache.view
        return view.start if isinstance(view, PrefillView) else 0

    def get_max_length(self) -> int:
        return self.cache.columns

    def _buffers(self) -> tuple[torch.Tensor, torch.Tensor]:
        assert self.key_buffer is not None and self.value_buffer is not None, "the SlotCache is not allocated"
        return self.key_buffer, self.value_buffer


class SlotCache(Cache):
    """Slots × columns of keys and values for every layer of a model (see the module's doc).

    `fixed`: allocated once at `slots` × `columns` (a captured step needs fixed addresses);
    otherwise it starts at what its first rows need and doubles, up to `columns` (the model's
    context; slots as many as rows join).
    """

    def __init__(self, num_layers: int, *, slots: int, columns: int, fixed: bool):
        self.slot_layers = [SlotLayer(self) for _ in range(num_layers)]
        super().__init__(layers=list(self.slot_layers))
        self.max_slots, self.max_columns, self.fixed = slots, columns, fixed
        self.slots = self.columns = 0  # allocated so far
        self.view: DecodeView | PrefillView | None = None

    @property
    def allocated(self) -> bool:
        return self.slots > 0

    @property
    def pad_column(self) -> int:
        """The column after the last a row may use: where a captured step's padding rows write.
        No span reaches it, so a span never equals the buffers' length (which would make a
        compiled step specialise on it)."""
        return self.columns

    def allocate_like(self, prefilled: list[DynamicLayer], slots: int, columns: int) -> None:
        """Allocate every layer after a prefilled DynamicCache's (its heads, head dim, dtype, device)."""
        if self.fixed:
            slots, columns = self.max_slots, self.max_columns
        for layer, source in zip(self.slot_layers, prefilled, strict=True):
            assert source.keys is not None and source.values is not None
            layer.allocate(source.keys, source.values, slots, columns + 1)
        self.slots, self.columns = slots, columns

    def reserve(self, slots: int, columns: int) -> None:
        """Room for `slots` rows of `columns` positions: double what is allocated until it fits."""
        if slots <= self.slots and columns <= self.columns:
            return
        assert not self.fixed, f"a fixed SlotCache holds {self.slots} x {self.columns}"
        new_slots, new_columns = self.slots, self.columns
        while new_slots < slots:
            new_slots *= 2
        while new_columns < columns:
            new_columns *= 2
        new_columns = min(new_columns, self.max_columns)
        for layer in self.slot_layers:
            layer.grow(new_slots, new_columns + 1)
        self.slots, self.columns = new_slots, new_columns

    def store(self, slot: int, prefilled: list[DynamicLayer], row: int, length: int) -> None:
        """Copy row `row` of a left-padded prefill (its last `length` positions) into `slot`."""
        for layer, source in zip(self.slot_layers, prefilled, strict=True):
            keys, values = layer._buffers()
            assert source.keys is not None and source.values is not None
            keys[slot, :, :length] = source.keys[row, :, source.keys.shape[2] - length :]
            values[slot, :, :length] = source.values[row, :, source.values.shape[2] - length :]

    def move(self, source: int, target: int, length: int) -> None:
        """Copy slot `source`'s first `length` columns into slot `target` (a leaving row's)."""
        for layer in self.slot_layers:
            keys, values = layer._buffers()
            keys[target, :, :length] = keys[source, :, :length]
            values[target, :, :length] = values[source, :, :length]
