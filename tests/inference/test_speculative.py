"""Speculative decoding (`inference.speculative`).

Real: SmolLM2's tokenizer, transformers' LlamaForCausalLM and DynamicCache (rolled
back with crop), the loading adapter reading checkpoint folders from disk. The
models are tiny random-weight Llamas (2 layers, hidden 32) built in-process, so text
is gibberish but the proposal / verification / rollback paths are the real ones;
the last test runs the real SmolLM2-135M-Instruct.
"""

import copy

import pytest
import torch

from inference.chunks import Finish, TokenChunk
from inference.engine import Engine
from inference.engines import build_engine
from inference.loading import ModelLoadError, load
from inference.protocol import ModelSpec, SamplingParams
from inference.speculative import SpeculativeEngine, accept_sampled, prompt_lookup
from tests.tiny_models import build_tiny_model

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=60)
SAMPLED = SamplingParams(temperature=0.9, top_p=0.9, max_new_tokens=40, seed=7)
REPEATED = "alpha beta gamma delta " * 6


@pytest.fixture(scope="module")
def draft_model(tokenizer):
    """Another tiny random Llama with the target's vocabulary (different weights)."""
    return build_tiny_model(len(tokenizer), seed=1)


@pytest.fixture(scope="module")
def plain(tokenizer, tiny_model):
    return Engine(tokenizer, tiny_model)


# Each engine verifies both ways: over a DynamicCache per stream (the CPU's default) and over its
# one fixed slot (inference.speculative.SlotVerifier: a GPU's, where its passes are captured; here
# the same pass runs eagerly).
VERIFIERS = {"dynamic cache": False, "one slot": True}


@pytest.fixture(scope="module", params=VERIFIERS)
def engines(request, tokenizer, tiny_model, draft_model):
    slots = VERIFIERS[request.param]
    return {"lookup": SpeculativeEngine(tokenizer, tiny_model, slots=slots),
            "drafted": SpeculativeEngine(tokenizer, tiny_model, draft=draft_model, num_speculative_tokens=3,
                                         slots=slots)}


@pytest.fixture(scope="module")
def lookup(engines):
    return engines["lookup"]


@pytest.fixture(scope="module")
def drafted(engines):
    return engines["drafted"]


@pytest.fixture(scope="module")
def repeated_ids(plain):
    return plain.encode([{"role": "user", "content": REPEATED}])


@pytest.fixture(scope="module")
def grounded_ids(plain, repeated_ids):
    """A context that holds its own continuation, as a text to rewrite does: the prompt,
    then the start of the target's greedy answer to it, then the prompt again. The
    tiny model's next tokens depend mostly on the last few, so lookups are often right."""
    answer, _ = run(plain, repeated_ids, SamplingParams(temperature=0.0, max_new_tokens=30))
    return repeated_ids + answer + repeated_ids


def run(engine, input_ids, params, should_cancel=None):
    stream = engine.stream(input_ids, params, should_cancel) if should_cancel else engine.stream(input_ids, params)
    chunks = list(stream)
    finishes = [c for c in chunks if isinstance(c, Finish)]
    assert len(finishes) == 1 and chunks[-1] is finishes[0], "exactly one Finish, last"
    return [c.token_id for c in chunks if isinstance(c, TokenChunk)], finishes[0]


def greedy_generate(model, input_ids, max_new_tokens):
    out = model.generate(
        torch.tensor([input_ids]), do_sample=False, max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens
    )
    return out[0, len(input_ids) :].tolist()


@pytest.mark.parametrize("prompt", ["repeated_ids", "grounded_ids"])
def test_prompt_lookup_greedy_is_the_targets_greedy_output(prompt, request, lookup, plain, tiny_model):
    input_ids = request.getfixturevalue(prompt)
    ids, finish = run(lookup, input_ids, GREEDY)
    assert ids == run(plain, input_ids, GREEDY)[0]
    if prompt == "grounded_ids":  # generate() is slow; one prompt is enough to pin it
        assert ids == greedy_generate(tiny_model, input_ids, GREEDY.max_new_tokens)
    assert finish.proposed_tokens > 0


def test_prompt_lookup_accepts_proposals_from_a_grounded_context(lookup, grounded_ids):
    _, finish = run(lookup, grounded_ids, GREEDY)
    assert finish.accepted_tokens >= 10  # the 30 tokens of the answer in the context, mostly


def test_draft_model_greedy_is_the_targets_greedy_output(drafted, plain, tiny_model, repeated_ids):
    ids, finish = run(drafted, repeated_ids, GREEDY)
    assert ids == greedy_generate(tiny_model, repeated_ids, GREEDY.max_new_tokens)
    assert ids == run(plain, repeated_ids, GREEDY)[0]
    assert finish.proposed_tokens > 0


def test_a_draft_with_a_differently_padded_vocabulary_works(tokenizer, tiny_model, plain, repeated_ids):
    """Same tokenizer, more output rows (models pad their vocabulary to different sizes)."""
    padded = build_tiny_model(len(tokenizer) + 64, seed=1)
    engine = SpeculativeEngine(tokenizer, tiny_model, draft=padded, num_speculative_tokens=3)
    assert run(engine, repeated_ids, GREEDY)[0] == run(plain, repeated_ids, GREEDY)[0]
    _, finish = run(engine, repeated_ids, SAMPLED)  # sampling compares p and q row against row
    assert finish.proposed_tokens > 0


def test_the_target_as_its_own_draft_is_always_accepted(tokenizer, tiny_model, plain, repeated_ids):
    engine = SpeculativeEngine(tokenizer, tiny_model, draft=tiny_model, num_speculative_tokens=4)
    for params in (GREEDY, SAMPLED):
        _, finish = run(engine, repeated_ids, params)
        assert finish.accepted_tokens == finish.proposed_tokens > 0
        # k + 1 tokens per verification: 4 proposals per 5 tokens, fewer only in the last step
        assert finish.proposed_tokens >= 4 * (finish.generated_tokens // 5)
    assert run(engine, repeated_ids, GREEDY)[0] == run(plain, repeated_ids, GREEDY)[0]


def test_acceptance_counters_are_bounded(lookup, drafted, repeated_ids):
    for engine in (lookup, drafted):
        for params in (GREEDY, SAMPLED):
            _, finish = run(engine, repeated_ids, params)
            # every verification adds one token of the target's own, so at most k proposals per token
            assert 0 <= finish.accepted_tokens <= finish.proposed_tokens
            assert finish.proposed_tokens <= engine.num_speculative_tokens * finish.generated_tokens
            assert finish.accepted_tokens < finish.generated_tokens


@pytest.mark.parametrize("engine_name", ["lookup", "drafted"])
def test_seeded_sampling_is_reproducible(engine_name, engines, repeated_ids):
    engine = engines[engine_name]
    first, _ = run(engine, repeated_ids, SAMPLED)
    assert run(engine, repeated_ids, SAMPLED)[0] == first
    other_seed = SamplingParams(temperature=0.9, top_p=0.9, max_new_tokens=40, seed=8)
    assert run(engine, repeated_ids, other_seed)[0] != first


@pytest.mark.parametrize("with_draft", [True, False])
def test_sampling_rule_reproduces_the_target_distribution(with_draft):
    """The first emitted token of one speculative step is distributed as p, whatever q proposed."""
    p = torch.tensor([0.5, 0.3, 0.15, 0.05])
    q = torch.tensor([0.1, 0.2, 0.3, 0.4])
    generator = torch.Generator().manual_seed(0)
    trials = 20000
    counts = torch.zeros(4)
    for _ in range(trials):
        if with_draft:
            proposal = int(torch.multinomial(q, 1, generator=generator))
            draft_probs = q.unsqueeze(0)
        else:
            proposal, draft_probs = 3, None  # prompt lookup: always the unlikely token
        kept, next_token = accept_sampled([proposal], draft_probs, torch.stack([p, p]), generator)
        counts[proposal if kept else next_token] += 1
    assert torch.allclose(counts / trials, p, atol=0.015)


def test_prompt_lookup_prefers_the_longest_latest_match():
    tokens = [1, 2, 3, 9, 9, 5, 2, 3, 7, 8, 1, 2, 3]
    # the trigram 1 2 3 occurs only at the start; the bigram 2 3 occurs later but is shorter
    assert prompt_lookup(tokens, 3, max_ngram=3, min_ngram=1) == [9, 9, 5]
    tokens = [4, 2, 3, 6, 5, 2, 3, 7, 2, 3]
    assert prompt_lookup(tokens, 2, max_ngram=3, min_ngram=1) == [7, 2]  # latest bigram match
    assert prompt_lookup([1, 2, 3, 4], 5, max_ngram=3, min_ngram=1) == []
    assert prompt_lookup([5, 6, 5], 0, max_ngram=3, min_ngram=1) == []


@pytest.mark.parametrize("engine_name", ["lookup", "drafted"])
def test_cancel_is_checked_before_every_token(engine_name, engines, repeated_ids):
    engine = engines[engine_name]
    calls = []

    def cancel_after_three():
        calls.append(1)
        return len(calls) > 3

    ids, finish = run(engine, repeated_ids, GREEDY, should_cancel=cancel_after_three)
    assert len(ids) == 3
    assert finish.reason == "cancelled" and finish.generated_tokens == 3
    ids, finish = run(engine, repeated_ids, GREEDY, should_cancel=lambda: True)
    assert ids == [] and finish.reason == "cancelled" and finish.first_token_time is None


def test_end_of_sequence_stops_and_is_not_emitted(tokenizer, tiny_model, plain, repeated_ids):
    greedy, _ = run(plain, repeated_ids, GREEDY)
    stop_at = next(i for i in range(5, len(greedy)) if greedy[i] not in greedy[:i])
    model = copy.deepcopy(tiny_model)
    model.generation_config.eos_token_id = [greedy[stop_at], 2]
    for draft, slots in ((None, False), (model, False), (None, True)):
        ids, finish = run(SpeculativeEngine(tokenizer, model, draft=draft, slots=slots), repeated_ids, GREEDY)
        assert ids == greedy[:stop_at]
        assert finish.reason == "stop" and finish.generated_tokens == stop_at


@pytest.mark.parametrize("engine_name", ["lookup", "drafted"])
def test_length_stops_exactly_at_max_new_tokens(engine_name, engines, repeated_ids):
    engine = engines[engine_name]
    for max_new_tokens in (1, 2, 7):
        ids, finish = run(engine, repeated_ids, SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens))
        assert len(ids) == max_new_tokens and finish.reason == "length"


@pytest.mark.parametrize("slots", [False, True])
def test_max_new_tokens_is_clamped_to_the_context(tokenizer, tiny_model, repeated_ids, slots):
    engine = SpeculativeEngine(tokenizer, tiny_model, context_length=len(repeated_ids) + 3, slots=slots)
    ids, finish = run(engine, repeated_ids, SamplingParams(temperature=0.0, max_new_tokens=100))
    assert len(ids) == 3 and finish.reason == "length"


def test_a_second_stream_while_the_slot_is_held_verifies_over_its_own_cache(tokenizer, tiny_model, plain,
                                                                              repeated_ids, grounded_ids):
    """Two streams of one engine, interleaved token by token: the first holds the slot, the second
    gets a DynamicCache; both are the target's greedy output, and a stream closed early (a
    cancelled request's) gives the slot back."""
    engine = SpeculativeEngine(tokenizer, tiny_model, slots=True)
    slot = engine.slot_verifier
    assert slot is not None and engine.step_kind.startswith("eager (no CUDA graphs on cpu")
    first, second = engine.stream(repeated_ids, GREEDY), engine.stream(grounded_ids, GREEDY)
    chunks: dict[str, list] = {"first": [], "second": []}
    for a, b in zip(first, second, strict=False):
        chunks["first"].append(a)
        chunks["second"].append(b)
        assert slot.busy or isinstance(a, Finish)  # released before its Finish
    chunks["first"].extend(first)
    chunks["second"].extend(second)
    assert not slot.busy
    for name, ids in (("first", repeated_ids), ("second", grounded_ids)):
        assert [c.token_id for c in chunks[name] if isinstance(c, TokenChunk)] == run(plain, ids, GREEDY)[0]
    stream = engine.stream(repeated_ids, GREEDY)
    next(stream)
    assert slot.busy
    stream.close()
    assert not slot.busy


def test_loading_a_speculative_spec_builds_the_speculative_engine(tmp_path, tiny_model_dir, draft_model, tokenizer):
    draft_dir = tmp_path / "draft"
    draft_model.save_pretrained(draft_dir)
    tokenizer.save_pretrained(draft_dir)
    spec = ModelSpec(
        slug="tiny-spec",
        source=str(tiny_model_dir),
        kind="speculative",
        draft_source=str(draft_dir),
        num_speculative_tokens=3,
    )
    loaded = load(spec)
    engine = build_engine(loaded)
    assert isinstance(engine, SpeculativeEngine) and engine.draft is loaded.draft
    assert engine.num_speculative_tokens == 3
    assert not getattr(engine, "supports_batching", False)
    lookup_engine = build_engine(load(ModelSpec(slug="tiny-lookup", source=str(tiny_model_dir), kind="speculative")))
    assert isinstance(lookup_engine, SpeculativeEngine) and lookup_engine.draft is None
    assert type(build_engine(load(ModelSpec(slug="tiny", source=str(tiny_model_dir))))) is Engine


def test_a_draft_with_another_vocabulary_is_refused(tmp_path, tiny_model_dir, tokenizer):
    other_tokenizer = copy.deepcopy(tokenizer)
    other_tokenizer.add_tokens(["<|not-in-the-target|>"])
    draft_dir = tmp_path / "other-vocab"
    build_tiny_model(len(other_tokenizer)).save_pretrained(draft_dir)
    other_tokenizer.save_pretrained(draft_dir)
    spec = ModelSpec(slug="bad", source=str(tiny_model_dir), kind="speculative", draft_source=str(draft_dir))
    with pytest.raises(ModelLoadError, match="does not share the target's tokenizer"):
        load(spec)


def test_a_missing_draft_is_a_load_error(tiny_model_dir, tmp_path):
    spec = ModelSpec(slug="x", source=str(tiny_model_dir), kind="speculative", draft_source=str(tmp_path / "none"))
    with pytest.raises(ModelLoadError, match="No model at"):
        load(spec)


@pytest.mark.slow
def test_smollm2_prompt_lookup_is_the_plain_greedy_output():
    """Real SmolLM2-135M-Instruct (packaged Q4_1 GGUF, through the default converted-model
    cache): prompt lookup on an input-grounded prompt gives exactly the plain engine's
    greedy tokens, with most proposals accepted."""
    from inference.sources import PACKAGED_SMOLLM2

    spec = ModelSpec(slug="smollm2-spec", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1], kind="speculative")
    loaded = load(spec)
    text = (
        "The keeper climbed the stairs evry evening at dusk, carying a small lamp and a notebook in "
        "which he recorded the wether, the ships that pased, and the gulls resting on the rocks below."
    )
    messages = [{"role": "user", "content": f"Rewrite the following text, fixing typos:\n\n{text}"}]
    plain = Engine.from_loaded(loaded)
    input_ids = plain.encode(messages)
    params = SamplingParams(temperature=0.0, max_new_tokens=60)
    expected, _ = run(plain, input_ids, params)
    ids, finish = run(build_engine(loaded), input_ids, params)
    assert ids == expected
    assert finish.accepted_tokens >= finish.proposed_tokens / 3 > 0
