"""A real tokenizer and a tiny random-weight model, for every test package (a pytest plugin
registered by tests/conftest.py).

The tokenizer is SmolLM2's, converted from the packaged GGUF once per session, so
byte-level multi-byte handling and the chat template are real. The model is a
2-layer LlamaForCausalLM with hidden size 32 and random weights: fast, and enough
to exercise the decode loop, the KV cache, sampling and real worker processes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TINY_CONTEXT = 4096


@pytest.fixture(scope="session")
def smollm2_tokenizer_dir(tmp_path_factory) -> Path:
    from transformers import AutoTokenizer

    from inference.sources import PACKAGED_SMOLLM2, resolve_source

    gguf = resolve_source(*PACKAGED_SMOLLM2)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    folder = tmp_path_factory.mktemp("smollm2-tokenizer")
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tokenizer(smollm2_tokenizer_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)


def build_tiny_model(vocab_size: int, seed: int = 0, hidden_size: int = 32, intermediate_size: int = 64,
                     num_key_value_heads: int = 2, num_hidden_layers: int = 2):
    """A random Llama (2 layers unless told) whose end-of-sequence token (2) is never the most likely.

    With the EOS row of the LM head at zero, its logit is 0 while the maximum over
    ~49k random logits is positive, so greedy runs always go to max_new_tokens.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=4,
        num_key_value_heads=num_key_value_heads,
        max_position_embeddings=TINY_CONTEXT,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        model.lm_head.weight[2].zero_()
    return model


@pytest.fixture(scope="session")
def tiny_model(tokenizer):
    return build_tiny_model(len(tokenizer))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, tiny_model, tokenizer) -> Path:
    """The tiny model and the tokenizer saved as a regular checkpoint folder."""
    folder = tmp_path_factory.mktemp("tiny-llama")
    tiny_model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
