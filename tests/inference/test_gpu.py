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


# The captured decode steps (inference.decode_step.GraphStep) on a small random-weight Llama, fp32:
# the same kernels run eagerly and replayed, so each row's greedy tokens are its tokens alone.

def _random_engine(tokenizer, context: int = 1024) -> Engine:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=8,
                         num_key_value_heads=2, vocab_size=len(tokenizer), max_position_embeddings=context)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).eval()
    return Engine(tokenizer, model, context_length=context)


def _drain(decoder, prompts, params) -> dict[int, list[int]]:
    tokens: dict[int, list[int]] = {}
    for i, prompt in enumerate(prompts):
        decoder.join(prompt, params, tag=i)
    while len(decoder):
        for row, chunk in decoder.step():
            if isinstance(chunk, TokenChunk):
                tokens.setdefault(row.tag, []).append(chunk.token_id)
    return tokens


def test_captured_steps_decode_each_row_as_it_would_alone(tokenizer):
    from inference.batched_decoder import BatchedDecoder

    engine = _random_engine(tokenizer)
    topics = ["Hi", "Tell me about the sea and its storms.", "What is 2+2?", "Name a colour.", "Why is the sky blue?"]
    prompts = [engine.encode([{"role": "user", "content": t}]) for t in topics]
    params = SamplingParams(temperature=0.0, max_new_tokens=24)
    decoder = BatchedDecoder(engine, max_rows=8)
    assert decoder.step_kind.startswith("CUDA graphs")
    for count in (1, 3, 5):  # buckets 1, 4 and 8: padding rows in the last two
        tokens = _drain(decoder, prompts[:count], params)
        for i in range(count):
            alone = [c.token_id for c in engine.stream(prompts[i], params) if isinstance(c, TokenChunk)]
            assert tokens[i] == alone, f"row {i} of {count}"


def test_every_bucket_is_captured_at_the_start(tokenizer):
    from inference.batched_decoder import BatchedDecoder
    from inference.decode_step import GraphStep, span_buckets

    decoder = BatchedDecoder(_random_engine(tokenizer), max_rows=12)
    step = decoder._step
    assert isinstance(step, GraphStep) and step.batches == (1, 2, 4, 8, 16)
    assert set(step.graphs) == {(rows, span) for rows in step.batches for span in span_buckets(1024)}
    assert decoder.cache.slots == 16 and decoder.cache.columns == 1024


def test_graphs_turned_off_decode_eagerly(tokenizer):
    from inference.batched_decoder import BatchedDecoder
    from inference.decode_step import EagerStep

    decoder = BatchedDecoder(_random_engine(tokenizer), graphs=False)
    assert isinstance(decoder._step, EagerStep) and "turned off" in decoder.step_kind


def test_a_step_that_cannot_be_captured_runs_eagerly(tokenizer, monkeypatch):
    from inference import decode_step
    from inference.batched_decoder import BatchedDecoder

    def refuse(*args, **kwargs):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(decode_step.GraphStep, "_capture", refuse)
    engine = _random_engine(tokenizer)
    decoder = BatchedDecoder(engine)
    assert decoder.step_kind == "eager (capture failed: operation not permitted when stream is capturing)"
    params = SamplingParams(temperature=0.0, max_new_tokens=8)
    prompt = engine.encode(PROMPT)
    alone = [c.token_id for c in engine.stream(prompt, params) if isinstance(c, TokenChunk)]
    assert _drain(decoder, [prompt], params)[0] == alone


def test_compiled_steps_decode_each_row_as_it_would_alone(tokenizer, monkeypatch, caplog):
    """ARENA_COMPILE_DECODE: the decoder layers compiled by region (inference.decode_step.compiled_layers),
    then captured; one compiled code serves every layer (a graph for one row, one for the rest).
    Each rows bucket keeps the faster of its plain and compiled graphs: here the timing is made
    to favour the compiled ones, so that they are the ones decoding."""
    import itertools

    from inference.batched_decoder import BatchedDecoder
    from inference.decode_step import GraphStep

    timings = itertools.cycle([2.0, 1.0])  # plain, then compiled, per bucket
    monkeypatch.setattr(GraphStep, "_replay_ms", lambda self, graph: next(timings))
    engine = _random_engine(tokenizer)
    with caplog.at_level("INFO", logger="inference.decode_step"):
        decoder = BatchedDecoder(engine, max_rows=8, compiled=True)
    assert "Decode steps: 2 compiled graphs" in caplog.text
    assert decoder._step.compiled_rows == (1, 2, 4, 8)
    assert decoder.step_kind.endswith("; torch.compile'd for rows 1, 2, 4, 8, where faster")
    topics = ["Hi", "Tell me about the sea and its storms.", "What is 2+2?", "Name a colour.", "Why is the sky blue?"]
    prompts = [engine.encode([{"role": "user", "content": t}]) for t in topics]
    params = SamplingParams(temperature=0.0, max_new_tokens=24)
    for count in (1, 3, 5):
        tokens = _drain(decoder, prompts[:count], params)
        for i in range(count):
            alone = [c.token_id for c in engine.stream(prompts[i], params) if isinstance(c, TokenChunk)]
            assert tokens[i] == alone, f"row {i} of {count}"


def test_speculative_verify_passes_are_captured_and_verify_as_the_target(tokenizer):
    """On a GPU a speculative engine verifies over its one slot, its k+1-token passes replayed."""
    engine = _random_engine(tokenizer)
    spec = SpeculativeEngine(tokenizer, engine.model, context_length=1024)
    assert spec.slot_verifier is not None and spec.step_kind.startswith("CUDA graphs")
    prompt = engine.encode([{"role": "user", "content": "alpha beta gamma delta " * 6}])
    params = SamplingParams(temperature=0.0, max_new_tokens=48)
    alone = [c.token_id for c in engine.stream(prompt, params) if isinstance(c, TokenChunk)]
    chunks = list(spec.stream(prompt, params))
    assert [c.token_id for c in chunks if isinstance(c, TokenChunk)] == alone
    assert chunks[-1].proposed_tokens > 0
