"""`inference.decoding`: stop sequences and `StreamDecoder` (one request at a time
through an engine's own `stream`, how engines that cannot batch are served).

Real: the plain and the prompt-lookup speculative engines over the tiny random-weight
Llama with SmolLM2's tokenizer (tests/tiny_models.py).
"""

import pytest

from inference.chunks import FINISH_CANCELLED, FINISH_LENGTH, Finish, TokenChunk
from inference.decoding import StopText, StreamDecoder
from inference.engine import Engine
from inference.protocol import SamplingParams
from inference.speculative import SpeculativeEngine

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=12)
USER = [{"role": "user", "content": "alpha beta gamma delta alpha beta gamma delta alpha beta"}]


@pytest.mark.parametrize(
    ("deltas", "stops", "streamed", "stopped"),
    [
        (["Hello wor", "ld. Bye"], ["world"], ["Hello ", ""], True),  # split across deltas
        (["ab", "c", "d"], ["xyz"], ["ab", "c", "d"], False),  # nothing to hold back
        (["one ##", "# two"], ["###", "two"], ["one ", ""], True),  # the held "##" became a stop
        (["a END b STOP"], ["STOP", "END"], ["a "], True),  # the earliest stop wins
        (["say S", "TOP", "x"], ["STOP"], ["say ", ""], True),
        (["x S", "Tx"], ["STOP"], ["x ", "STx"], False),  # a false start is released
    ],
)
def test_stop_text_holds_back_only_what_may_start_a_stop(deltas, stops, streamed, stopped):
    stop_text = StopText(stops)
    out = [stop_text.feed(d) for d in deltas]
    assert out[: len(streamed)] == streamed and all(o == "" for o in out[len(streamed) :])
    assert stop_text.stopped is stopped


@pytest.fixture(params=["plain", "speculative"])
def engine(request, tokenizer, tiny_model):
    return (Engine if request.param == "plain" else SpeculativeEngine)(tokenizer, tiny_model)


def drain(decoder, first_chunks):
    chunks = list(first_chunks)
    while len(decoder):
        chunks.extend(chunk for _, chunk in decoder.step())
    return chunks


def test_the_decoder_yields_what_the_engine_streams(engine):
    prompt = engine.encode(USER)
    decoder = StreamDecoder(engine)
    row, first = decoder.join(prompt, GREEDY, tag="job")
    assert row.tag == "job" and len(decoder) == 1
    chunks = drain(decoder, first)
    alone = list(engine.stream(prompt, GREEDY))
    assert chunks[:-1] == alone[:-1]  # the token chunks, text deltas included
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason == FINISH_LENGTH and finish.generated_tokens == 12
    assert len(decoder) == 0


def test_one_request_at_a_time(engine):
    decoder = StreamDecoder(engine)
    decoder.join(engine.encode(USER), GREEDY)
    with pytest.raises(RuntimeError, match="one request at a time"):
        decoder.join(engine.encode(USER), GREEDY)


def test_cancel_ends_with_the_engines_own_finish(engine):
    """The counts come from the engine: a speculative one's proposals and acceptances too."""
    decoder = StreamDecoder(engine)
    row, first = decoder.join(engine.encode(USER), SamplingParams(temperature=0.0, max_new_tokens=200))
    streamed = [*first, *(chunk for _ in range(4) for _, chunk in decoder.step())]
    assert all(isinstance(c, TokenChunk) for c in streamed)
    [(cancelled_row, finish)] = decoder.cancel([row])
    assert cancelled_row is row and len(decoder) == 0
    assert finish.reason == FINISH_CANCELLED and finish.generated_tokens == len(streamed)
    if isinstance(engine, SpeculativeEngine):
        assert finish.proposed_tokens >= finish.accepted_tokens and finish.proposed_tokens > 0
    assert decoder.cancel([row]) == []  # already gone


def test_a_reset_closes_the_engines_stream(engine):
    decoder = StreamDecoder(engine)
    row, _ = decoder.join(engine.encode(USER), GREEDY)
    decoder.reset()
    assert len(decoder) == 0 and decoder.step() == []
    with pytest.raises(StopIteration):
        next(row.chunks)
