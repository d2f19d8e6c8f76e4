"""Structured output on real models: the packaged SmolLM2-135M-Instruct through our transformers
engine (alone, in a batch, and through a speculative entry) and through llama.cpp in-process.

Every constrained answer must follow its schema or regex, greedy and sampled; the same prompts
unconstrained are judged too and their rate printed beside it (a 135M model asked for JSON mostly
wraps it in a Markdown fence or runs out of tokens). Slow: a few minutes on 2 cores.
"""

import time

import pytest
import torch

from inference import llamacpp
from inference.batched_decoder import BatchedDecoder
from inference.chunks import FINISH_STOP, Failure, Finish, TokenChunk
from inference.constrained import mask_logits
from inference.engine import Engine
from inference.llamacpp_decoder import LlamaCppDecoder
from inference.loading import load
from inference.protocol import ModelSpec, SamplingParams
from inference.sources import PACKAGED_SMOLLM2
from inference.speculative import SpeculativeEngine
from inference.structured import answer_valid

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

SPEC = ModelSpec(slug="smollm2", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1])

# (prompt, constraint): bounded schemas and regexes, so an answer always fits in MAX_TOKENS.
SCHEMAS = [
    ("Is Paris in France? Answer in JSON with the key answer.",
     {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}, "required": ["answer"],
      "additionalProperties": False}),
    ("What is the capital of Italy, and its country? Answer in JSON.",
     {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                       "country": {"type": "string", "maxLength": 12}},
      "required": ["city", "country"], "additionalProperties": False}),
    ("Name up to three primary colours as a JSON object.",
     {"type": "object", "properties": {"colours": {"type": "array", "items": {"enum": ["red", "green", "blue",
                                                                                       "yellow"]},
                                                   "minItems": 1, "maxItems": 3}},
      "required": ["colours"], "additionalProperties": False}),
    ("Describe a 30 year old person as JSON with age and adult.",
     {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0, "maximum": 120},
                                       "adult": {"type": "boolean"}},
      "required": ["age", "adult"], "additionalProperties": False}),
    ("List two small prime numbers as a JSON array.",
     {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 99}, "minItems": 2, "maxItems": 4}),
]
REGEXES = [
    ("Is the sky blue? Answer yes or no.", r"(yes|no)"),
    ("How many legs does a spider have? Answer with a number.", r"[0-9]{1,3}"),
    ("When did the Berlin Wall fall? Give the date as YYYY-MM-DD.", r"\d{4}-\d{2}-\d{2}"),
]
CASES = [(prompt, {"json_schema": schema}) for prompt, schema in SCHEMAS] + \
        [(prompt, {"regex": regex}) for prompt, regex in REGEXES]
MAX_TOKENS = 40
SETTINGS = [{"temperature": 0.0}, {"temperature": 0.8, "seed": 1}]  # greedy, and nucleus sampling


@pytest.fixture(scope="module")
def loaded():
    return load(SPEC)


@pytest.fixture(scope="module")
def engine(loaded):
    return Engine.from_loaded(loaded)


def ask(engine, prompt: str, params: SamplingParams) -> tuple[str, Finish]:
    chunks = list(engine.stream(engine.encode([{"role": "user", "content": prompt}]), params))
    finish = chunks[-1]
    assert isinstance(finish, Finish)
    return "".join(c.text_delta for c in chunks), finish


def params(constraint: dict, setting: dict) -> SamplingParams:
    return SamplingParams.from_dict({**setting, **constraint, "max_new_tokens": MAX_TOKENS})


def test_constrained_answers_are_always_valid_and_unconstrained_ones_are_reported(engine):
    constrained = unconstrained = 0
    for prompt, constraint in CASES:
        for setting in SETTINGS:
            text, finish = ask(engine, prompt, params(constraint, setting))
            assert answer_valid(text, **constraint), (prompt, setting, text)
            assert finish.reason == FINISH_STOP  # the grammar completed: nothing was cut
            constrained += 1
            free, _ = ask(engine, prompt, params({}, setting))
            unconstrained += answer_valid(free, **constraint)
    total = len(CASES) * len(SETTINGS)
    print(f"\nSmolLM2, {len(SCHEMAS)} schemas and {len(REGEXES)} regexes x {len(SETTINGS)} settings: "
          f"constrained {constrained}/{total} valid (100%), unconstrained {unconstrained}/{total} valid "
          f"({100 * unconstrained / total:.0f}%)")


def test_a_batch_constrains_its_constrained_rows_only(engine):
    """Constrained and unconstrained rows in one batch: each constrained answer valid, and the
    unconstrained rows token for token what they are alone (the mask touches no other row)."""
    free = [SamplingParams(temperature=0.0, max_new_tokens=24), SamplingParams(temperature=0.9, seed=5,
                                                                               max_new_tokens=24)]
    prompts = [engine.encode([{"role": "user", "content": prompt}]) for prompt, _ in CASES[:4]]
    alone = [[c.token_id for c in engine.stream(prompts[i], p) if isinstance(c, TokenChunk)]
             for i, p in enumerate(free)]
    decoder = BatchedDecoder(engine)
    rows = {}
    for i, p in enumerate(free):
        rows[decoder.join(prompts[i], p, f"free{i}")[0]] = ("free", i)
    for i in (2, 3):
        constraint = CASES[i][1]
        rows[decoder.join(prompts[i], params(constraint, {"temperature": 0.0}), f"c{i}")[0]] = ("c", i)
    tokens: dict = {row: [] for row in rows}
    texts: dict = dict.fromkeys(rows, "")
    while len(decoder):
        for row, chunk in decoder.step():
            texts[row] += chunk.text_delta if hasattr(chunk, "text_delta") else ""
            if isinstance(chunk, TokenChunk):
                tokens[row].append(chunk.token_id)
    for row, (kind, i) in rows.items():
        if kind == "free":
            assert tokens[row] == alone[i]
        else:
            assert answer_valid(texts[row], **CASES[i][1]), texts[row]


def test_a_speculative_entry_decodes_constrained_requests_plainly(loaded, engine):
    speculative = SpeculativeEngine(loaded.tokenizer, loaded.model, loaded.context_length)  # prompt lookup
    prompt, constraint = CASES[1]
    greedy = params(constraint, {"temperature": 0.0})
    text, finish = ask(speculative, prompt, greedy)
    assert answer_valid(text, **constraint) and finish.proposed_tokens == 0
    assert text == ask(engine, prompt, greedy)[0]  # the plain engine's greedy answer


def test_the_mask_costs_little_per_token(engine):
    """The mask's cost per token (llguidance's bitmask, its unpacking, the masked fill and the
    matcher's step), replayed on a real constrained answer, against one decode step's time."""
    prompt, constraint = CASES[1]
    p = params(constraint, {"temperature": 0.0})
    chunks = list(engine.stream(engine.encode([{"role": "user", "content": prompt}]), p))
    answer = [c.token_id for c in chunks if isinstance(c, TokenChunk)]
    finish = chunks[-1]
    step_s = (finish.last_token_time - finish.first_token_time) / max(1, finish.generated_tokens - 1)
    logits = torch.randn(1, engine.grammars.vocab_size)
    rounds = 20
    constraints = [engine.grammars.constraint(p) for _ in range(rounds)]  # compiling the grammar is per request
    started = time.perf_counter()
    for c in constraints:
        for token in answer:
            mask_logits(logits, [c])
            c.accept(token)
    per_token = (time.perf_counter() - started) / (rounds * len(answer))
    print(f"\nMask overhead: {per_token * 1e3:.3f} ms per token ({len(answer)} tokens), "
          f"a decode step {step_s * 1e3:.1f} ms: {100 * per_token / step_s:.1f}%")
    assert per_token < 0.25 * step_s


@pytest.fixture(scope="module")
def llama():
    spec = ModelSpec(slug="smollm2-llamacpp", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1],
                     engine="llamacpp")
    server = llamacpp.start(spec, parallel=2, threads=2)
    yield server
    del server.server


def test_llamacpp_constrains_to_the_schema_and_the_regex(llama):
    valid = 0
    for prompt, constraint in CASES:
        for setting in SETTINGS:
            decoder = LlamaCppDecoder(llama.engine)
            decoder.join([{"role": "user", "content": prompt}], params(constraint, setting))
            chunks = []
            while not chunks or not isinstance(chunks[-1], (Finish, Failure)):
                chunks += [chunk for _, chunk in decoder.step()]
            assert isinstance(chunks[-1], Finish), chunks[-1]
            text = "".join(c.text_delta for c in chunks)
            assert answer_valid(text, **constraint), (prompt, setting, text)
            valid += 1
    print(f"\nllama.cpp: {valid}/{len(CASES) * 2} constrained answers valid")
