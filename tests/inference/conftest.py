"""Fixtures for the inference tests: a real tokenizer and a tiny random-weight model.

The tokenizer is SmolLM2's, converted from the packaged GGUF once per session, so
byte-level multi-byte handling and the chat template are real. The model is a
2-layer LlamaForCausalLM with hidden size 32 and random weights: fast, and enough
to exercise the decode loop, the KV cache and sampling.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis

os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parents[2]
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
                     num_key_value_heads: int = 2):
    """A random 2-layer Llama whose end-of-sequence token (2) is never the most likely.

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
        num_hidden_layers=2,
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


class WorkerProcess:
    """A real `python -m inference.worker` subprocess, always stopped in teardown."""

    def __init__(self, worker_id: str, spec_json: str, redis_url: str, prefix: str, log_path: Path, env=None):
        self.worker_id = worker_id
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - open for the process lifetime, closed in stop()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "inference.worker",
                "--worker-id",
                worker_id,
                "--spec",
                spec_json,
                "--redis-url",
                redis_url,
                "--prefix",
                prefix,
            ],
            cwd=REPO_ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ARENA_WORKER_THREADS": "1", **(env or {})},
        )

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_state(self, client: redis.Redis, key: str, states: set[str], timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            fields = client.hgetall(key)
            if fields.get("state") in states:
                return fields
            if self.proc.poll() is not None and fields.get("state") not in states:
                break
            time.sleep(0.05)
        raise AssertionError(f"worker never reached {states}: hash={client.hgetall(key)}\n{self.log_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._log.close()


@pytest.fixture
def start_worker(tmp_path, redis_url):
    """Start workers for one test; every one is stopped (then killed) afterwards."""
    started: list[WorkerProcess] = []

    def start(spec_json: str, prefix: str, env=None) -> WorkerProcess:
        worker_id = f"w-{uuid.uuid4().hex[:8]}"
        worker = WorkerProcess(worker_id, spec_json, redis_url, prefix, tmp_path / f"{worker_id}.log", env)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()
