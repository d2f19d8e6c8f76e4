"""Continuous batching: `BatchedDecoder` in-process (its scheduler: test_scheduler.py).

Real: the decode loop over the tiny random-weight Llama (fp32, 2 layers) with
SmolLM2's tokenizer, its rows in a SlotCache (the eager step: this is the CPU; the captured
one is tests/inference/test_gpu.py's). The identity tests compare each row of a batch
with the same request run alone through `Engine.stream`, token for token: columns beyond
a row's own are masked out exactly (their attention weight is 0) and positions count
real tokens only, so a row computes what it computes alone; on this model and
these prompts no fp32 rounding difference flips an argmax.
"""

import pytest
import torch

from inference import protocol
from inference.batched_decoder import BatchedDecoder
from inference.chunks import FINISH_CANCELLED, FINISH_LENGTH, FINISH_STOP_SEQUENCE, Failure, Finish, TokenChunk
from inference.engine import Engine
from inference.protocol import SamplingParams
from tests.tiny_models import build_tiny_model

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=16)
TOPICS = ["Hi", "Tell me a long story about dragons, castles and the sea, please.", "What is 2+2?", "Name a colour."]


@pytest.fixture(scope="module")
def engine(tokenizer, tiny_model):
    return Engine(tokenizer, tiny_model)


@pytest.fixture(scope="module")
def prompts(engine):
    return [engine.encode([{"role": "user", "content": topic}]) for topic in TOPICS]


@pytest.fixture(scope="module")
def peaked_engine(tokenizer):
    """The tiny model with its LM head scaled up: distributions peaked like a real model's, so
    the top NUCLEUS_FAST_K hold the nucleus and a draw is far from a tie."""
    model = build_tiny_model(len(tokenizer))
    with torch.no_grad():
        model.lm_head.weight.mul_(30)
    return Engine(tokenizer, model)


def alone(engine, prompt, params) -> list[int]:
    return [c.token_id for c in engine.stream(prompt, params) if isinstance(c, TokenChunk)]


class Collector:
    """Drives a decoder and files every chunk under its row's tag."""

    def __init__(self, decoder: BatchedDecoder):
        self.decoder = decoder
        self.tokens: dict = {}
        self.finishes: dict = {}

    def join(self, tag, prompt, params):
        row, chunks = self.decoder.join(prompt, params, tag)
        self._file(row, chunks)
        return row

    def step(self, times=1):
        for _ in range(times):
            for row, chunk in self.decoder.step():
                self._file(row, [chunk])

    def drain(self):
        while len(self.decoder):
            self.step()

    def _file(self, row, chunks):
        for chunk in chunks:
            if isinstance(chunk, (Finish, Failure)):
                self.finishes[row.tag] = chunk
            else:
                self.tokens.setdefault(row.tag, []).append(chunk.token_id)


def test_every_row_of_a_batch_decodes_as_it_would_alone(engine, prompts):
    """Four prompts of different lengths joined together, each greedy.

    Seeded sampling is not compared: on this random model the distribution is
    nearly flat over 49k tokens, so a last-bit difference between a batched and a
    lone matmul moves a draw to a neighbouring token within about ten steps.
    """
    params = [GREEDY, GREEDY, SamplingParams(temperature=0.0, max_new_tokens=12), GREEDY]
    batch = Collector(BatchedDecoder(engine))
    for tag, (prompt, p) in enumerate(zip(prompts, params, strict=True)):
        batch.join(tag, prompt, p)
    assert len(batch.decoder) == 4
    batch.drain()
    for tag, (prompt, p) in enumerate(zip(prompts, params, strict=True)):
        assert batch.tokens[tag] == alone(engine, prompt, p), f"row {tag}"
        assert batch.finishes[tag].reason == FINISH_LENGTH
        assert batch.finishes[tag].generated_tokens == p.max_new_tokens


def test_seeded_sampling_draws_as_engine_stream_does(engine, prompts):
    """A lone row (no padding, so the same logits): the batched draws replay Engine.stream's."""
    for params in (
        SamplingParams(temperature=0.9, top_p=0.9, seed=7, max_new_tokens=12),
        SamplingParams(temperature=1.3, top_p=1.0, seed=8, max_new_tokens=12),
    ):
        batch = Collector(BatchedDecoder(engine))
        batch.join("row", prompts[1], params)
        batch.drain()
        assert batch.tokens["row"] == alone(engine, prompts[1], params)


def test_a_request_joins_a_running_batch(engine, prompts):
    batch = Collector(BatchedDecoder(engine))
    batch.join("first", prompts[1], GREEDY)
    batch.step(5)
    batch.join("late", prompts[0], GREEDY)  # shorter prompt, later start: both sides get padded
    assert len(batch.decoder) == 2 and "first" not in batch.finishes
    batch.step(3)
    batch.join("later", prompts[2], GREEDY)
    batch.drain()
    assert batch.tokens["first"] == alone(engine, prompts[1], GREEDY)
    assert batch.tokens["late"] == alone(engine, prompts[0], GREEDY)
    assert batch.tokens["later"] == alone(engine, prompts[2], GREEDY)


def test_a_finished_row_leaves_while_the_others_continue(engine, prompts):
    short = SamplingParams(temperature=0.0, max_new_tokens=3)
    batch = Collector(BatchedDecoder(engine))
    batch.join("long", prompts[0], GREEDY)
    batch.join("short", prompts[1], short)  # the longest prompt: prefilled first, so in slot 0
    batch.step(3)  # the prefill (first tokens), then two decode steps
    assert batch.finishes["short"].reason == FINISH_LENGTH and len(batch.decoder) == 1
    assert batch.decoder.rows[0].tag == "long"  # moved into the slot the short row left
    batch.drain()
    assert batch.tokens["long"] == alone(engine, prompts[0], GREEDY)
    assert batch.tokens["short"] == alone(engine, prompts[1], short)


def test_cancelling_one_row_leaves_the_others_untouched(engine, prompts):
    batch = Collector(BatchedDecoder(engine))
    rows = [batch.join(tag, prompts[tag], GREEDY) for tag in range(3)]
    batch.step(5)
    [(row, finish)] = batch.decoder.cancel([rows[1]])
    assert row is rows[1] and finish.reason == FINISH_CANCELLED and finish.generated_tokens == 5
    assert sorted(r.tag for r in batch.decoder.rows) == [0, 2]
    batch.drain()
    assert batch.tokens[0] == alone(engine, prompts[0], GREEDY)
    assert batch.tokens[2] == alone(engine, prompts[2], GREEDY)


def test_a_row_stops_at_its_stop_sequence(engine, tokenizer, prompts):
    """The stop string is taken from the middle of the row's own greedy text."""
    full_text = tokenizer.decode(alone(engine, prompts[0], GREEDY), skip_special_tokens=True)
    stop = full_text[len(full_text) // 2 : len(full_text) // 2 + 3]
    params = SamplingParams(temperature=0.0, max_new_tokens=16, stop=(stop, "\u2603 never"))
    decoder = BatchedDecoder(engine)
    chunks = decoder.join(prompts[0], params, "row")[1]
    while len(decoder):
        chunks.extend(chunk for _, chunk in decoder.step())
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason == FINISH_STOP_SEQUENCE and finish.generated_tokens < 16
    assert "".join(c.text_delta for c in chunks) == full_text[: full_text.index(stop)]


def test_after_a_reset_the_batch_starts_afresh(engine, prompts):
    """What the scheduler does after a failed step: every row is forgotten, new ones decode as alone."""
    batch = Collector(BatchedDecoder(engine))
    batch.join("gone", prompts[1], GREEDY)
    batch.step(2)
    batch.decoder.reset()
    assert len(batch.decoder) == 0 and batch.decoder.rows == [] and batch.decoder.step() == []
    batch.join("new", prompts[0], GREEDY)
    batch.drain()
    assert batch.tokens["new"] == alone(engine, prompts[0], GREEDY)


SEEDED = [
    SamplingParams(temperature=1.0, top_p=0.9, seed=11, max_new_tokens=20),
    SamplingParams(temperature=0.7, top_p=1.0, seed=12, max_new_tokens=14),
    GREEDY,
    SamplingParams(temperature=1.3, top_p=0.5, seed=13, max_new_tokens=18),
]


def test_seeded_rows_of_a_batch_draw_as_they_would_alone(peaked_engine):
    """Sampled rows (nucleus and whole-vocabulary) beside a greedy one, prompts of different
    lengths, joining at different steps and leaving at different lengths: each row's tokens
    are the ones its seed gives it alone (each row draws from its own generator only)."""
    prompts = [peaked_engine.encode([{"role": "user", "content": topic}]) for topic in TOPICS]
    batch = Collector(BatchedDecoder(peaked_engine))
    batch.join(0, prompts[0], SEEDED[0])
    batch.join(1, prompts[1], SEEDED[1])
    batch.step(3)
    batch.join(2, prompts[2], SEEDED[2])
    batch.step(2)
    batch.join(3, prompts[3], SEEDED[3])
    batch.drain()
    for tag, (prompt, params) in enumerate(zip(prompts, SEEDED, strict=True)):
        assert batch.tokens[tag] == alone(peaked_engine, prompt, params), f"row {tag}"
    assert batch.tokens[0] != alone(peaked_engine, prompts[0], GREEDY)  # it did sample


def test_a_step_writes_into_the_cache_in_place(engine, prompts):
    """Steps with room left write each row's next column into the slots' buffers: no copy of the cache."""
    decoder = BatchedDecoder(engine)
    for tag in range(3):
        decoder.join(prompts[tag], GREEDY, tag)
    decoder.step()  # the prefill
    layer = decoder.cache.layers[0]
    buffer = layer.key_buffer.data_ptr()
    lengths = [row.length for row in decoder.rows]
    for step in range(1, 6):
        decoder.step()
        assert decoder.cache.layers[0] is layer and layer.key_buffer.data_ptr() == buffer
        assert [row.length for row in decoder.rows] == [length + step for length in lengths]


def test_the_cache_grows_beyond_its_first_capacity(engine, prompts, monkeypatch):
    """Little room at first: the slots double in rows and columns while rows join and leave,
    and every row still decodes as it does alone."""
    monkeypatch.setattr(BatchedDecoder, "FIRST_COLUMNS", 8)
    short = SamplingParams(temperature=0.0, max_new_tokens=5)
    long = SamplingParams(temperature=0.0, max_new_tokens=40)
    batch = Collector(BatchedDecoder(engine))
    batch.join("long", prompts[0], long)
    batch.step()
    first = (batch.decoder.cache.slots, batch.decoder.cache.columns)
    batch.join("short", prompts[1], short)
    for step in range(39):
        batch.step()
        if step == 20:
            batch.join("late", prompts[2], GREEDY)
            batch.join("later", prompts[3], GREEDY)
    batch.drain()
    grown = (batch.decoder.cache.slots, batch.decoder.cache.columns)
    assert grown[0] > first[0] and grown[1] > first[1]
    assert batch.tokens["long"] == alone(engine, prompts[0], long)
    assert batch.tokens["short"] == alone(engine, prompts[1], short)
    assert batch.tokens["late"] == alone(engine, prompts[2], GREEDY)
    assert batch.tokens["later"] == alone(engine, prompts[3], GREEDY)
    assert {finish.reason for finish in batch.finishes.values()} == {FINISH_LENGTH}


class CountingForward:
    """Counts the model's forward passes and the rows of each."""

    def __init__(self, model):
        self.rows: list[int] = []
        self.handle = model.register_forward_pre_hook(self._note, with_kwargs=True)

    def _note(self, module, args, kwargs):
        self.rows.append(kwargs["input_ids"].shape[0])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.remove()


def test_newcomers_of_similar_length_share_one_prefill_pass(engine, prompts):
    """Three prompts of similar length in one padded pass (the decode of the running row is
    another); a prompt far longer than the rest gets a pass of its own."""
    long_prompt = engine.encode([{"role": "user", "content": " ".join(["word"] * 200)}])
    batch = Collector(BatchedDecoder(engine))
    batch.join("running", prompts[1], GREEDY)
    batch.step()
    for tag in (0, 2, 3):
        batch.join(tag, prompts[tag], GREEDY)
    batch.join("long", long_prompt, GREEDY)
    with CountingForward(engine.model) as forward:
        batch.step()
    assert sorted(forward.rows) == [1, 1, 3]  # the running row's decode, the long prompt, the three
    assert len(batch.decoder.rows) == 5 and not batch.decoder.waiting
    batch.drain()
    for tag in (0, 2, 3):
        assert batch.tokens[tag] == alone(engine, prompts[tag], GREEDY), f"row {tag}"
    assert batch.tokens["long"] == alone(engine, long_prompt, GREEDY)
    assert batch.tokens["running"] == alone(engine, prompts[1], GREEDY)


def test_a_newcomer_cancelled_before_its_prefill_never_runs(engine, prompts):
    batch = Collector(BatchedDecoder(engine))
    row = batch.join("gone", prompts[0], GREEDY)
    batch.join("kept", prompts[2], GREEDY)
    [(cancelled, finish)] = batch.decoder.cancel([row])
    assert cancelled is row and finish.reason == FINISH_CANCELLED and finish.generated_tokens == 0
    batch.drain()
    assert "gone" not in batch.tokens and batch.tokens["kept"] == alone(engine, prompts[2], GREEDY)


def test_a_request_ended_by_its_first_token_never_joins(engine, prompts):
    batch = Collector(BatchedDecoder(engine))
    batch.join("one", prompts[0], SamplingParams(temperature=0.0, max_new_tokens=1))
    batch.join("more", prompts[2], GREEDY)
    batch.step()
    assert batch.finishes["one"].generated_tokens == 1 and [r.tag for r in batch.decoder.rows] == ["more"]
    batch.drain()
    assert batch.tokens["more"] == alone(engine, prompts[2], GREEDY)


def test_a_failed_prefill_fails_its_newcomers_only(engine, prompts, monkeypatch):
    """The running row goes on undisturbed; the newcomers end with a Failure the user can read."""
    batch = Collector(BatchedDecoder(engine))
    batch.join("running", prompts[1], GREEDY)
    batch.step(2)
    batch.join("a", prompts[0], GREEDY)
    batch.join("b", prompts[2], GREEDY)

    def broken(group):
        raise RuntimeError("simulated kernel failure\nwith a second line")

    monkeypatch.setattr(batch.decoder, "_prefill", broken)
    out = batch.decoder.step()
    monkeypatch.undo()
    failures = {row.tag: chunk for row, chunk in out if isinstance(chunk, Failure)}
    assert set(failures) == {"a", "b"}
    assert failures["a"].reason == "The model failed while generating: simulated kernel failure"
    assert failures["a"].code == protocol.ENGINE_ERROR
    assert [r.tag for r in batch.decoder.rows] == ["running"] and not batch.decoder.waiting
    for row, chunk in out:
        if row.tag == "running":
            batch._file(row, [chunk])
    batch.drain()
    assert batch.tokens["running"] == alone(engine, prompts[1], GREEDY)


def three_rows_prefilled(decoder: BatchedDecoder, prompts):
    """Three rows joined and prefilled, room for 8 rows of 300 columns: the cache, each row's
    pending token and its next column."""
    for tag in range(3):
        decoder.join(prompts[tag], GREEDY, tag)
    decoder.step()  # the prefill
    decoder.cache.reserve(8, 300)
    return decoder.cache, [row.pending_token for row in decoder.rows], [row.length for row in decoder.rows]


def test_a_padded_step_computes_what_the_exact_one_does(engine, prompts):
    """What a captured step replays (inference.decode_step.GraphStep), run eagerly: 3 rows padded
    to a bucket of 8, over a span of 256 columns, give the real rows the logits of the exact
    step, and the padding rows write only the cache's padding column."""
    from inference.decode_step import decode_forward, padded

    cache, tokens, columns = three_rows_prefilled(BatchedDecoder(engine), prompts)
    before = cache.layers[0].key_buffer.clone()
    with torch.inference_mode():
        exact = decode_forward(engine.model, cache, torch.tensor(tokens)[:, None], torch.tensor(columns)[:, None],
                               torch.arange(max(columns) + 1))
        inputs = padded([[t] for t in tokens], [[c] for c in columns], 8, cache.pad_column)
        bucketed = decode_forward(engine.model, cache, inputs[0], inputs[1], torch.arange(256))
    torch.testing.assert_close(bucketed[:3], exact, rtol=1e-5, atol=1e-5)
    changed = (cache.layers[0].key_buffer != before).any(dim=(1, 3)).nonzero().tolist()
    real = {(row, column) for row, column in enumerate(columns)}
    padding = {(row, cache.pad_column) for row in range(3, 8)}
    assert set(map(tuple, changed)) <= real | padding and padding <= set(map(tuple, changed))


def test_compiled_layers_compute_what_the_plain_ones_do_and_compile_once_for_all(tokenizer, prompts):
    """What a compiled captured step replays (GraphStep with ARENA_COMPILE_DECODE), run on the CPU
    (inductor compiles C++ there): the decoder layers swapped for compiled ones give the plain
    step's logits, a batch of rows and one row alone, and every layer reuses one compiled code
    (one graph for the rows, one for a single row: 0/1 are their own case), not one per layer;
    afterwards the model's own layers are back."""
    from inference.decode_step import compiled_graph_count, compiled_layers, decode_forward, padded

    model = build_tiny_model(len(tokenizer), num_hidden_layers=4)
    cache, tokens, columns = three_rows_prefilled(BatchedDecoder(Engine(tokenizer, model), graphs=False), prompts)
    layers = list(model.get_decoder().layers)
    rows, at = [[t] for t in tokens], [[c] for c in columns]
    cases = [(padded(rows, at, 8, cache.pad_column), 3), (padded(rows[:1], at[:1], 1, 0), 1)]
    positions = torch.arange(256)
    before = compiled_graph_count()
    with torch.inference_mode(), torch._inductor.config.patch(freezing=True):  # as GPTQModel's CPU kernel leaves it
        plain = [decode_forward(model, cache, inputs[0], inputs[1], positions) for inputs, _ in cases]
        with compiled_layers(model, cache):
            assert list(model.get_decoder().layers) != layers
            compiled = [decode_forward(model, cache, inputs[0], inputs[1], positions) for inputs, _ in cases]
    for (_, real), expected, got in zip(cases, plain, compiled, strict=True):
        torch.testing.assert_close(got[:real], expected[:real], rtol=1e-4, atol=1e-4)
    assert compiled_graph_count() - before == 2
    assert list(model.get_decoder().layers) == layers


def test_a_long_prompt_is_prefilled_in_chunks_beside_the_running_rows(engine, prompts, monkeypatch):
    """A prompt longer than PREFILL_CHUNK takes a chunk a step while the running row still gets a
    token every step; then it decodes exactly as it does alone, and so does the running row."""
    monkeypatch.setattr(BatchedDecoder, "PREFILL_CHUNK", 8)
    long_prompt = prompts[1]  # the longest topic
    chunks_needed = -(-len(long_prompt) // 8)
    assert chunks_needed >= 3
    batch = Collector(BatchedDecoder(engine))
    running = SamplingParams(temperature=0.0, max_new_tokens=40)
    batch.join("running", prompts[0][:8], running)  # short enough for one pass
    batch.step()
    batch.join("long", long_prompt, GREEDY)
    for step in range(1, chunks_needed):
        batch.step()
        assert len(batch.tokens["running"]) == 1 + step and "long" not in batch.tokens  # still chunking
    batch.step()  # the last chunk: its first token
    assert len(batch.tokens["long"]) == 1
    batch.drain()
    assert batch.tokens["long"] == alone(engine, long_prompt, GREEDY)
    assert batch.tokens["running"] == alone(engine, prompts[0][:8], running)


def test_a_prompt_cancelled_while_chunking_never_joins(engine, prompts, monkeypatch):
    monkeypatch.setattr(BatchedDecoder, "PREFILL_CHUNK", 8)
    batch = Collector(BatchedDecoder(engine))
    row = batch.join("long", prompts[1], GREEDY)
    batch.step()  # its first chunk
    assert len(batch.decoder) == 1 and not batch.decoder.rows
    (cancelled, finish), = batch.decoder.cancel([row])
    assert cancelled is row and finish.reason == FINISH_CANCELLED and len(batch.decoder) == 0
    assert batch.decoder.step() == []
