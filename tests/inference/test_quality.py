"""Perplexity and the round-to-nearest baseline (inference/quality.py)."""

from __future__ import annotations

import math

import pytest
import torch

from inference.quality import EVALUATION_TEXT, perplexity, rtn_dequantized, rtn_quantize_
from tests.tiny_models import build_tiny_model


@pytest.mark.parametrize("symmetric", [False, True])
def test_rtn_uses_at_most_2_to_the_bits_levels_per_group(symmetric):
    torch.manual_seed(0)
    weight = torch.randn(8, 128)
    restored = rtn_dequantized(weight, bits=4, group_size=64, symmetric=symmetric)
    for group in restored.reshape(8, 2, 64).reshape(16, 64):
        assert len(torch.unique(group)) <= 16
    # Each weight moves by at most half a step (plus the clamp at the symmetric grid's top).
    step = (weight.reshape(16, 64).amax(1) - weight.reshape(16, 64).amin(1)) / 15
    error = (restored - weight).abs().reshape(16, 64).amax(1)
    if not symmetric:
        assert torch.all(error <= step / 2 + 1e-5)
    assert torch.allclose(restored, weight, atol=0.6)


def test_rtn_keeps_weights_already_on_the_grid():
    levels = torch.arange(16, dtype=torch.float32) * 0.25 - 1.0  # 16 evenly spaced values
    weight = levels.repeat(4, 4)  # 4 rows of 64 columns: one group per row
    assert torch.allclose(rtn_dequantized(weight, bits=4, group_size=64), weight, atol=1e-6)


def test_rtn_refuses_a_width_that_does_not_split_into_groups():
    with pytest.raises(ValueError, match="groups of 64"):
        rtn_dequantized(torch.zeros(4, 96), group_size=64)


def test_rtn_quantize_changes_linears_but_not_the_head(tokenizer):
    model = build_tiny_model(len(tokenizer))
    head_before = model.lm_head.weight.clone()
    q_before = model.model.layers[0].self_attn.q_proj.weight.clone()
    changed, exact = rtn_quantize_(model, bits=4, group_size=32)
    assert changed == 2 * 7 and exact == 0  # q, k, v, o, gate, up, down in each of 2 layers
    assert torch.equal(model.lm_head.weight, head_before)
    assert not torch.equal(model.model.layers[0].self_attn.q_proj.weight, q_before)


def test_perplexity_of_a_random_model_is_near_the_vocabulary_size(tokenizer):
    """Random small weights give near-uniform next-token distributions: ppl ~ vocab size."""
    model = build_tiny_model(len(tokenizer))
    text = EVALUATION_TEXT.read_text()[:2000]
    ppl = perplexity(model, tokenizer, text, window=128)
    assert math.isfinite(ppl)
    assert 0.5 * len(tokenizer) < ppl < 2 * len(tokenizer)


def test_perplexity_matches_the_models_own_loss(tokenizer):
    """One window: exp of transformers' mean cross-entropy; several: the token-weighted mean."""
    model = build_tiny_model(len(tokenizer))
    text = EVALUATION_TEXT.read_text()[:1500]
    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        whole = model(input_ids=ids, labels=ids).loss.item()
        first, second = ids[:, :100], ids[:, 100:200]
        split = (
            model(input_ids=first, labels=first).loss.item() * 99
            + model(input_ids=second, labels=second).loss.item() * 99
        ) / 198
    assert perplexity(model, tokenizer, text, window=ids.shape[1]) == pytest.approx(math.exp(whole), rel=1e-4)
    assert perplexity(model, tokenizer, tokenizer.decode(ids[0, :200]), window=100) == pytest.approx(
        math.exp(split), rel=1e-3
    )


def test_perplexity_refuses_a_one_token_text(tokenizer):
    with pytest.raises(ValueError, match="too short"):
        perplexity(build_tiny_model(len(tokenizer)), tokenizer, "a", window=16)


def q4_1_dequantized(out_features: int, in_features: int, seed: int = 0) -> torch.Tensor:
    """What a GGUF Q4_1 tensor becomes in fp32: per block of 32, q * d + m with fp16 d and m,
    each block's q spanning 0..15 (llama.cpp's quantiser puts the block's min at 0, max at 15)."""
    g = torch.Generator().manual_seed(seed)
    blocks = in_features // 32
    q = torch.randint(0, 16, (out_features, blocks, 32), generator=g).float()
    q[..., 0], q[..., 1] = 0, 15
    d = (torch.rand(out_features, blocks, 1, generator=g) * 0.01 + 1e-4).half().float()
    m = (torch.randn(out_features, blocks, 1, generator=g) * 0.05).half().float()
    return (q * d + m).reshape(out_features, in_features)


def test_a_dequantised_q4_1_weight_is_re_encoded_exactly():
    """The packaged SmolLM2 is Q4_1: its "fp32" weights are a 4-bit model already, which a
    float-zero grid of 32 with fp16 scale and min stores bit for bit (bench/awq.py reports it)."""
    weight = q4_1_dequantized(8, 128)
    assert torch.equal(rtn_dequantized(weight, 4, 32, float_zero=True, scale_dtype=torch.float16), weight)
    assert not torch.equal(rtn_dequantized(weight, 4, 64), weight)  # an integer zero at 64: lossy
    noisy = weight + torch.randn_like(weight) * 1e-3
    assert not torch.equal(rtn_dequantized(noisy, 4, 32, float_zero=True, scale_dtype=torch.float16), noisy)


def test_the_machine_texts_are_read_when_present():
    from inference.quality import MACHINE_TEXTS, evaluation_texts

    texts = evaluation_texts()
    assert EVALUATION_TEXT.name in texts
    assert {p.name for p in MACHINE_TEXTS if p.is_file()} <= set(texts)
    assert all(len(t) > 1000 for t in texts.values())
