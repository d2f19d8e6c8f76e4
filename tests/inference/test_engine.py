"""The decode loop. Real: SmolLM2's tokenizer (converted from the packaged GGUF) and
transformers' LlamaForCausalLM with its KV cache; the model is a tiny random-weight
one (2 layers, hidden 32), built in-process, so answers are gibberish but every
token path (greedy, sampling, stops, detokenisation) is the real one.
"""

import copy

import pytest
import torch

from inference.chunks import Finish, PromptTooLong, TokenChunk
from inference.engine import Engine, IncrementalDetokenizer, make_token_picker, nucleus
from inference.protocol import SamplingParams

MESSAGES = [{"role": "user", "content": "Tell me something."}]


@pytest.fixture(scope="module")
def engine(tokenizer, tiny_model):
    return Engine(tokenizer, tiny_model)


def run(engine, params, input_ids=None, should_cancel=None):
    input_ids = input_ids or engine.encode(MESSAGES)
    chunks = list(
        engine.stream(input_ids, params, should_cancel) if should_cancel else engine.stream(input_ids, params)
    )
    tokens = [c for c in chunks if isinstance(c, TokenChunk)]
    finishes = [c for c in chunks if isinstance(c, Finish)]
    assert len(finishes) == 1 and chunks[-1] is finishes[0], "exactly one Finish, last"
    return [c.token_id for c in tokens], "".join(c.text_delta for c in tokens) + finishes[0].text_delta, finishes[0]


def test_encode_uses_the_chat_template(engine, tokenizer):
    ids = engine.encode(MESSAGES)
    text = tokenizer.decode(ids)
    assert text.endswith("<|im_start|>user\nTell me something.<|im_end|>\n<|im_start|>assistant\n")


def test_encode_without_a_chat_template_concatenates(tokenizer, tiny_model):
    plain = copy.deepcopy(tokenizer)
    plain.chat_template = None
    engine = Engine(plain, tiny_model)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert engine.encode(messages) == plain("Be brief.\n\nHi")["input_ids"]


def test_greedy_matches_model_generate(engine, tiny_model):
    input_ids = engine.encode(MESSAGES)
    ids, _, finish = run(engine, SamplingParams(temperature=0.0, max_new_tokens=40), input_ids)
    expected = tiny_model.generate(
        torch.tensor([input_ids]),
        attention_mask=torch.ones(1, len(input_ids), dtype=torch.long),
        do_sample=False,
        max_new_tokens=40,
    )[0, len(input_ids) :].tolist()
    assert ids == expected
    assert finish.reason == "length" and finish.generated_tokens == 40 and finish.prompt_tokens == len(input_ids)
    assert finish.first_token_time <= finish.last_token_time


def test_seeded_sampling_is_reproducible(engine):
    params = SamplingParams(temperature=1.0, top_p=0.9, max_new_tokens=30, seed=1234)
    first, _, _ = run(engine, params)
    again, _, _ = run(engine, params)
    other, _, _ = run(engine, SamplingParams(temperature=1.0, top_p=0.9, max_new_tokens=30, seed=4321))
    assert first == again
    assert first != other


def test_unseeded_sampling_differs_between_runs(engine):
    params = SamplingParams(temperature=1.0, max_new_tokens=20)
    assert run(engine, params)[0] != run(engine, params)[0]


def test_nucleus_keeps_the_smallest_set_reaching_top_p():
    probs = torch.tensor([0.05, 0.5, 0.3, 0.15])
    kept, token_ids = nucleus(probs, 0.75)
    assert token_ids.tolist()[:2] == [1, 2]
    assert kept.tolist() == pytest.approx([0.5, 0.3, 0.0, 0.0])


def test_nucleus_on_a_flat_distribution_falls_back_to_a_full_sort():
    probs = torch.full((1000,), 1 / 1000)
    kept, _ = nucleus(probs, 0.5)
    assert int((kept > 0).sum()) == 500


def test_top_p_sampling_never_leaves_the_nucleus():
    logits = torch.log(torch.tensor([0.05, 0.5, 0.3, 0.15]))
    pick = make_token_picker(SamplingParams(temperature=1.0, top_p=0.75, seed=0), torch.device("cpu"))
    seen = {pick(logits) for _ in range(300)}
    assert seen == {1, 2}


def test_cancel_is_checked_before_every_step(engine):
    calls = []

    def cancel_after_three():
        calls.append(1)
        return len(calls) > 3

    ids, _, finish = run(engine, SamplingParams(temperature=0.0, max_new_tokens=50), should_cancel=cancel_after_three)
    assert len(ids) == 3
    assert finish.reason == "cancelled" and finish.generated_tokens == 3


def test_cancel_before_the_first_token(engine):
    ids, text, finish = run(engine, SamplingParams(max_new_tokens=5), should_cancel=lambda: True)
    assert ids == [] and text == ""
    assert finish.reason == "cancelled" and finish.first_token_time is None


def test_end_of_sequence_stops_and_is_not_emitted(tokenizer, tiny_model, engine):
    greedy, _, _ = run(engine, SamplingParams(temperature=0.0, max_new_tokens=10))
    stop_id = greedy[3]
    assert stop_id not in greedy[:3]
    model = copy.deepcopy(tiny_model)
    model.generation_config.eos_token_id = [stop_id, 2]
    ids, _, finish = run(Engine(tokenizer, model), SamplingParams(temperature=0.0, max_new_tokens=10))
    assert ids == greedy[:3]
    assert finish.reason == "stop" and finish.generated_tokens == 3


def test_length_stops_at_max_new_tokens(engine):
    ids, _, finish = run(engine, SamplingParams(temperature=0.0, max_new_tokens=5))
    assert len(ids) == 5 and finish.reason == "length"


def test_max_new_tokens_is_clamped_to_the_context(tokenizer, tiny_model):
    input_ids = Engine(tokenizer, tiny_model).encode(MESSAGES)
    engine = Engine(tokenizer, tiny_model, context_length=len(input_ids) + 3)
    assert engine.check_context(len(input_ids), SamplingParams(max_new_tokens=100)) == 3
    ids, _, finish = run(engine, SamplingParams(temperature=0.0, max_new_tokens=100), input_ids)
    assert len(ids) == 3 and finish.reason == "length"


def test_prompt_too_long_fails_before_any_work(tokenizer, tiny_model):
    input_ids = Engine(tokenizer, tiny_model).encode(MESSAGES)
    engine = Engine(tokenizer, tiny_model, context_length=len(input_ids))
    asked = []
    with pytest.raises(PromptTooLong) as caught:
        next(engine.stream(input_ids, SamplingParams(), lambda: asked.append(1) or False))
    assert asked == []
    message = str(caught.value)
    assert f"{len(input_ids)} tokens" in message and f"{len(input_ids)} tokens, the answer included" in message
    with pytest.raises(PromptTooLong, match=f"prompt is {len(input_ids) + 5} tokens .* holds only {len(input_ids)}"):
        engine.check_context(len(input_ids) + 5, SamplingParams())


def test_caller_runs_outside_inference_mode_between_tokens(engine):
    chunks = engine.stream(engine.encode(MESSAGES), SamplingParams(temperature=0.0, max_new_tokens=3))
    assert isinstance(next(chunks), TokenChunk)
    assert not torch.is_inference_mode_enabled()
    chunks.close()


def test_empty_prompt_is_refused(engine):
    with pytest.raises(ValueError, match="empty"):
        next(engine.stream([], SamplingParams()))


MULTI_BYTE = "Grüße aus Köln — 世界 🌍🚀 naïve café 👩‍💻!"


def test_detokenizer_never_splits_a_character(tokenizer):
    ids = tokenizer(MULTI_BYTE)["input_ids"]
    # The test means something only if some character spans several tokens.
    assert any("\ufffd" in tokenizer.decode([i]) for i in ids)
    detokenizer = IncrementalDetokenizer(tokenizer)
    deltas = [detokenizer.add(i) for i in ids] + [detokenizer.flush()]
    assert all("\ufffd" not in d for d in deltas)
    assert "".join(deltas) == MULTI_BYTE
    assert "" in deltas  # held back at least once while a character was incomplete


def test_detokenizer_skips_special_tokens(tokenizer):
    ids = (
        tokenizer("Hi")["input_ids"]
        + [tokenizer.convert_tokens_to_ids("<|im_start|>")]
        + tokenizer(" there")["input_ids"]
    )
    detokenizer = IncrementalDetokenizer(tokenizer)
    text = "".join(detokenizer.add(i) for i in ids) + detokenizer.flush()
    assert text == tokenizer.decode(ids, skip_special_tokens=True) == "Hi there"


def test_detokenizer_flushes_an_unfinished_character(tokenizer):
    ids = tokenizer("a🌍")["input_ids"][:-1]  # cut inside the emoji's bytes
    detokenizer = IncrementalDetokenizer(tokenizer)
    text = "".join(detokenizer.add(i) for i in ids)
    assert text == "a"
    assert text + detokenizer.flush() == tokenizer.decode(ids, skip_special_tokens=True)


def test_streamed_text_equals_decoding_all_tokens(engine, tokenizer):
    """Random weights at temperature 1 emit arbitrary byte tokens, split characters included."""
    ids, text, _ = run(engine, SamplingParams(temperature=1.0, top_p=1.0, max_new_tokens=300, seed=7))
    assert text == tokenizer.decode(ids, skip_special_tokens=True)
