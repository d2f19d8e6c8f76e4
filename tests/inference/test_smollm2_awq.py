"""The AWQ kind on the real SmolLM2-135M-Instruct, quantised by GPTQModel with the
shipped calibration text.

This uses the ordinary model cache (ARENA_MODEL_CACHE, default ~/.cache/llm-arena),
keyed by the GGUF's content and the AWQ settings: the first run on a machine
quantises (about 3-5 minutes on 2 idle CPU cores, longer on shared ones), every later
run loads the result in seconds, exactly as a user's second start does.
"""

import pytest

from inference.chunks import TokenChunk
from inference.engine import Engine
from inference.loading import load
from inference.protocol import ModelSpec, SamplingParams
from inference.quality import EVALUATION_TEXT, perplexity
from inference.sources import PACKAGED_SMOLLM2

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

SOURCE = {"source": PACKAGED_SMOLLM2[0], "gguf_file": PACKAGED_SMOLLM2[1]}
# A quarter of the evaluation text: perplexity is compared, not reported, here.
TEXT = EVALUATION_TEXT.read_text()[:3000]


@pytest.fixture(scope="module")
def gptqmodel():
    return pytest.importorskip("gptqmodel")


@pytest.fixture(scope="module")
def full():
    return load(ModelSpec(slug="smollm2", **SOURCE))


@pytest.fixture(scope="module")
def awq(gptqmodel):
    return load(ModelSpec(slug="smollm2-awq", kind="awq", **SOURCE))


def test_awq_weights_take_under_forty_percent_of_full_precision(full, awq):
    q_proj = awq.model.model.layers[0].self_attn.q_proj
    assert q_proj.qweight.dtype.is_floating_point is False and q_proj.group_size == 64
    assert awq.weight_bytes <= 0.4 * full.weight_bytes


def test_awq_stays_close_to_full_precision(full, awq):
    full_ppl = perplexity(full.model, full.tokenizer, TEXT)
    awq_ppl = perplexity(awq.model, awq.tokenizer, TEXT)
    assert full_ppl < awq_ppl < 2 * full_ppl


def test_awq_answers_a_question(awq):
    engine = Engine.from_loaded(awq)
    ids = engine.encode([{"role": "user", "content": "What is the capital of France?"}])
    chunks = engine.stream(ids, SamplingParams(temperature=0.0, max_new_tokens=16))
    assert "Paris" in "".join(c.text_delta for c in chunks if isinstance(c, TokenChunk))
