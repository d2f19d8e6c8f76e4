"""GPTQModel's AWQ search, made fast on a CPU (used by inference/awq.py while it quantises).

Profiled on SmolLM2-135M with GPTQModel 7.7 on 2 cores (py-spy): a layer took ~50 s,
about 45% in the scale search's 21 module forwards per scaling group (Linear in
bf16, which GPTQModel picks on a CPU; without AVX512-BF16 a bf16 matmul ran ~5x
slower than fp32 here) and ~30% in the clipping search, which multiplies every
weight group by every sampled token elementwise and sums (a broadcast product as
large as out x tokens x in, ten times per linear). Two changes, about 10x together:

- the search runs on fp32 weights (`GPTQModel.load(dtype=torch.float32)`); its
  packed layers keep fp16 scales, which is what the AWQ layers store anyway;
- the clipping search computes the same products as one batched matmul per grid
  step (`compute_best_clip`): the same token sampling, the same grid and the same
  choice of bound, bit-identical to GPTQModel's on the tests' random tensors.

GPTQModel offers neither as a setting, so `fast_search()` swaps them in for the
duration of a quantisation and puts the originals back; only under the GPTQModel
version they were written against (`method()`), which the cache key names too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

PATCHED_VERSION = "7.7"  # the GPTQModel minor version whose AWQProcessor these patches were written against
FAST = "fp32-matmul-clip"
SEARCH_DTYPE = torch.float32
PACK_DTYPE = torch.float16  # the dtype the AWQ layers are created with when the search ran in fp32


@torch.inference_mode()
def compute_best_clip(self, w: torch.Tensor, input_feat: torch.Tensor, n_grid: int = 20, max_shrink: float = 0.5,
                      n_sample_token: int = 512) -> torch.Tensor:
    """AWQProcessor._compute_best_clip as matmuls: per weight group, the clipping bound
    (a fraction of the group's max |w|, from 1 down to `max_shrink`) whose 4-bit round
    trip best reproduces the group's outputs on the sampled tokens. Returns [out, groups, 1].
    """
    out_features, in_features = w.shape
    group = self.qcfg.group_size if self.qcfg.group_size > 0 else in_features
    groups = in_features // group
    tokens = input_feat.reshape(-1, in_features)
    tokens = tokens[:: max(1, tokens.shape[0] // n_sample_token)]  # GPTQModel's sampling: every k-th token
    x = tokens.to(device=w.device, dtype=w.dtype).reshape(-1, groups, group).transpose(0, 1)  # [G, T, g]
    w_groups = w.reshape(out_features, groups, group)  # [C, G, g]
    reference = torch.bmm(x, w_groups.permute(1, 2, 0))  # [G, T, C]: each group's share of each output
    org_max = w_groups.abs().amax(dim=-1, keepdim=True)  # [C, G, 1]

    clamped, quantised = torch.empty_like(w_groups), torch.empty_like(w_groups)
    errors, bounds = [torch.full_like(org_max, float("inf"))], [org_max]  # the unclipped bound wins ties and NaNs
    for step in range(int(max_shrink * n_grid)):
        bound = org_max * (1 - step / n_grid)
        torch.clamp(w_groups, -bound, bound, out=clamped)
        self._pseudo_quantize_tensor_into(clamped, quantised, abs_max=bound)
        error = torch.bmm(x, quantised.permute(1, 2, 0)).sub_(reference).pow_(2)
        errors.append(error.mean(dim=1).t().unsqueeze(-1))
        bounds.append(bound)
    best = torch.stack(errors).nan_to_num(nan=torch.inf).argmin(dim=0)  # first minimum, as GPTQModel's
    return torch.gather(torch.stack(bounds), 0, best.unsqueeze(0)).squeeze(0)


def _pack_in_half(create_quant_module):
    """GPTQModel's AWQ layers accept fp16/bf16 only; an fp32 search packs into fp16 layers."""

    def create(*args, dtype=None, **kwargs):
        return create_quant_module(*args, dtype=PACK_DTYPE if dtype == torch.float32 else dtype, **kwargs)

    return create


def method() -> str:
    """How this environment searches: "fp32-matmul-clip", or GPTQModel's own way under
    another GPTQModel version (whose internals may have moved), slower but correct."""
    import gptqmodel

    version = ".".join(gptqmodel.__version__.split(".")[:2])
    return FAST if version == PATCHED_VERSION else f"gptqmodel-{version}-default"


@contextlib.contextmanager
def fast_search() -> Iterator[None]:
    """GPTQModel's AWQ processor with the matmul clipping search and fp32-tolerant packing.

    Only where method() is FAST; the caller loads the model in fp32 inside it.
    """
    from gptqmodel.looper import awq_processor

    processor = awq_processor.AWQProcessor
    saved = processor._compute_best_clip, awq_processor.create_quant_module
    processor._compute_best_clip = compute_best_clip
    awq_processor.create_quant_module = _pack_in_half(saved[1])
    try:
        yield
    finally:
        processor._compute_best_clip, awq_processor.create_quant_module = saved
