"""The GPU paths: bf16/fp16 full precision, AWQ with the kernel GPTQModel picks for
the card, and speculative decoding. Every test here skips without a CUDA device (CI
has none); on a machine with one they load the packaged SmolLM2 onto it."""

from __future__ import annotations

import pytest
import torch

from inference.chunks import TokenChunk
from inference.engine import Engine
from inference.loading import load, pick_device, pick_dtype
from inference.protocol import ModelSpec, SamplingParams
from inference.sources import PACKAGED_SMOLLM2
from inference.speculative import SpeculativeEngine

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

SMOLLM2 = {"source": PACKAGED_SMOLLM2[0], "gguf_file": PACKAGED_SMOLLM2[1]}
PROMPT = [{"role": "user", "content": "Rewrite politely: 'Send me the report by Friday or else.'"}]
GREEDY = SamplingParams(temperature=0.0, max_new_tokens=32)


def greedy_tokens(engine) -> list[int]:
    ids = engine.encode(PROMPT)
    return [c.token_id for c in engine.stream(ids, GREEDY) if isinstance(c, TokenChunk)]


def test_full_precision_picks_a_half_dtype_on_the_gpu():
    assert pick_device().type == "cuda"
    expected = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    assert pick_dtype("auto", pick_device()) == expected
    loaded = load(ModelSpec(slug="smollm2", **SMOLLM2))
    assert loaded.device.type == "cuda" and next(loaded.model.parameters()).dtype == expected
    assert len(greedy_tokens(Engine.from_loaded(loaded))) > 0


@pytest.mark.parametrize("precision", ["fp16", "fp32"])
def test_precision_is_overridable_on_the_gpu(precision):
    loaded = load(ModelSpec(slug=f"smollm2-{precision}", precision=precision, **SMOLLM2))
    assert next(loaded.model.parameters()).dtype == {"fp16": torch.float16, "fp32": torch.float32}[precision]


def test_speculative_greedy_matches_the_target_on_the_gpu():
    loaded = load(ModelSpec(slug="smollm2", **SMOLLM2))
    plain = greedy_tokens(Engine.from_loaded(loaded))
    spec = SpeculativeEngine(loaded.tokenizer, loaded.model, context_length=loaded.context_length)
    assert greedy_tokens(spec) == plain


@pytest.mark.timeout(900)  # the first load on a machine JIT-compiles two CUDA extensions
def test_awq_runs_on_the_gpu_kernel():
    pytest.importorskip("gptqmodel")
    loaded = load(ModelSpec(slug="smollm2-awq", kind="awq", **SMOLLM2))
    q_proj = loaded.model.model.layers[0].self_attn.q_proj
    assert not isinstance(q_proj, torch.nn.Linear) and q_proj.qweight.is_cuda
    assert len(greedy_tokens(Engine.from_loaded(loaded))) > 0
