"""Quality of a (quantised) model: perplexity on a text, and a round-to-nearest baseline.

Django-free and independent of any quantisation library, so a benchmark can judge
AWQ against the simplest 4-bit scheme (RTN: each weight group's min-max grid) and
against full precision on the same held-out text.
"""

from __future__ import annotations

import math
import sysconfig
from pathlib import Path

import torch

DATA_DIR = Path(__file__).resolve().parent / "data"
EVALUATION_TEXT = DATA_DIR / "evaluation.txt"


@torch.no_grad()
def perplexity(model: torch.nn.Module, tokenizer, text: str, window: int = 512) -> float:
    """exp(mean next-token negative log-likelihood) over consecutive, non-overlapping windows.

    Windows do not overlap so the cost is one forward pass per window; every token
    after the first of its window is scored exactly once.
    """
    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids[0]
    device = next(model.parameters()).device
    total_nll, scored = 0.0, 0
    for start in range(0, len(ids) - 1, window):
        chunk = ids[start : start + window].unsqueeze(0).to(device)
        if chunk.shape[1] < 2:
            break
        logits = model(input_ids=chunk, use_cache=False).logits[0, :-1].float()
        nll = torch.nn.functional.cross_entropy(logits, chunk[0, 1:], reduction="sum")
        total_nll += nll.item()
        scored += chunk.shape[1] - 1
    if scored == 0:
        raise ValueError("The text is too short to measure perplexity (fewer than 2 tokens).")
    return math.exp(total_nll / scored)


def rtn_dequantized(weight: torch.Tensor, bits: int = 4, group_size: int = 64, symmetric: bool = False,
                    float_zero: bool = False, scale_dtype: torch.dtype | None = None) -> torch.Tensor:
    """`weight` rounded to a `bits`-bit grid per group of `group_size` input columns, then dequantised.

    Asymmetric: the grid spans each group's [min, max] with an integer zero point.
    Symmetric: the grid is [-2^(b-1), 2^(b-1) - 1] * absmax / (2^(b-1) - 1).
    Float zero (llama.cpp's Q4_1): value = min + q * scale, the min kept as a float; with
    `scale_dtype` float16, scale and min are stored as Q4_1 stores them.
    """
    out_features, in_features = weight.shape
    if in_features % group_size:
        raise ValueError(f"{in_features} input features do not split into groups of {group_size}.")
    groups = weight.float().reshape(out_features, in_features // group_size, group_size)
    if symmetric:
        q_max = 2 ** (bits - 1) - 1
        scale = (groups.abs().amax(dim=-1, keepdim=True) / q_max).clamp(min=1e-8)
        q = torch.clamp(torch.round(groups / scale), -q_max - 1, q_max)
        restored = q * scale
    elif float_zero:
        q_max = 2**bits - 1
        low = groups.amin(dim=-1, keepdim=True)
        scale = ((groups.amax(dim=-1, keepdim=True) - low) / q_max).clamp(min=1e-8)
        if scale_dtype is not None:
            low, scale = low.to(scale_dtype).float(), scale.to(scale_dtype).float()
        q = torch.clamp(torch.round((groups - low) / scale), 0, q_max)
        restored = q * scale + low  # ggml's Q4_1 dequantisation: x = q * d + m
    else:
        q_max = 2**bits - 1
        low = groups.amin(dim=-1, keepdim=True)
        high = groups.amax(dim=-1, keepdim=True)
        scale = ((high - low) / q_max).clamp(min=1e-8)
        zero = torch.round(-low / scale)
        q = torch.clamp(torch.round(groups / scale) + zero, 0, q_max)
        restored = (q - zero) * scale
    return restored.reshape(out_features, in_features).to(weight.dtype)


@torch.no_grad()
def rtn_quantize_(
    model: torch.nn.Module,
    bits: int = 4,
    group_size: int = 64,
    symmetric: bool = False,
    skip: tuple[str, ...] = ("lm_head",),
    float_zero: bool = False,
    scale_dtype: torch.dtype | None = None,
) -> tuple[int, int]:
    """Replace every Linear weight (bar `skip`) by its RTN round trip, in place; return how many,
    and how many came back bit for bit (a weight already on such a grid: a dequantised GGUF).

    The LM head is skipped by default because AWQ keeps it at full precision too
    (and in tied models it is the embedding).
    """
    changed = exact = 0
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and name.split(".")[-1] not in skip:
            restored = rtn_dequantized(module.weight, bits, group_size, symmetric, float_zero, scale_dtype)
            exact += int(torch.equal(restored, module.weight))
            module.weight.copy_(restored)
            changed += 1
    return changed, exact


# Texts every machine of this kind has, besides the evaluation text we ship: perplexity on
# more than one kind of text (a licence in legal English, and another in plain English).
MACHINE_TEXTS = (
    Path(sysconfig.get_path("stdlib")) / "LICENSE.txt",  # CPython's licence and history
    Path("/usr/share/common-licenses/GPL-3"),  # Debian's copy of the GPL
)


def evaluation_texts() -> dict[str, str]:
    """Name -> text: the shipped evaluation text, and those of MACHINE_TEXTS this machine has."""
    texts = {EVALUATION_TEXT.name: EVALUATION_TEXT.read_text()}
    for path in MACHINE_TEXTS:
        if path.is_file():
            texts[path.name] = path.read_text(errors="replace")
    return texts
