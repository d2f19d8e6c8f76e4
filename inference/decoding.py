"""Decoders: the requests an engine is generating now, advanced a token at a time.

A decoder holds rows, one per running request: `join` starts one and returns its
first chunks, `step` advances every row by one token, `cancel` ends rows at once,
each with its Finish. A row's text is already cut at its stop sequences. Two kinds:
`inference.batched_decoder.BatchedDecoder` runs many rows in one forward pass;
`StreamDecoder` here runs one row at a time through an engine's own `stream`, for
engines whose decode loop cannot batch (speculative decoding). The scheduler
(`inference.scheduler`) drives either the same way. No Redis here.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Generator, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from inference.chunks import FINISH_CANCELLED, FINISH_STOP_SEQUENCE, Chunk, Failure, Finish, TokenChunk
from inference.protocol import SamplingParams

if TYPE_CHECKING:
    from inference.engine import Engine

RowT = TypeVar("RowT")

# What a worker answers (one token) before it says it is ready: a model's first request pays one-time
# costs (measured on 2 cores: SmolLM2 on transformers 1.0 s to its first token, then 0.3 s; on llama.cpp
# 1.6 s, then 0.25 s) that belong to its load, not to the first user's time to first token. A prompt of
# a few dozen tokens, like a user's: a one-token prompt left most of that cost to the first request.
WARM_UP_MESSAGES = [{"role": "user", "content": (
    "Before the first question of the day, say hello in one short sentence to the people who are about "
    "to compare the answers of several language models side by side.")}]


class Prompter(Protocol):
    """What a job needs of an engine before it runs: its prompt, and room for its answer."""

    @property
    def counts_tokens(self) -> bool:
        """False: the prompt stays text (a server tokenises it) and its length is not known here."""
        ...

    def encode(self, messages: list[dict[str, str]]) -> Sequence[Any]: ...

    def check_context(self, prompt_tokens: int, params: SamplingParams) -> int: ...


class Decoder(Protocol[RowT]):
    """What the scheduler needs of a decoder; each row carries the caller's `tag`."""

    @property
    def engine(self) -> Prompter: ...

    def __len__(self) -> int: ...

    def join(self, input_ids: Sequence[Any], params: SamplingParams, tag: Any = None) -> tuple[RowT, list[Chunk]]:
        """Start a request; its row and whatever chunks it already has (ending in a Finish if it
        already ended). A decoder that prefills newcomers together (BatchedDecoder) returns none:
        they come from the next `step`."""
        ...

    def step(self) -> list[tuple[RowT, Chunk]]:
        """One token for every row; finished rows leave."""
        ...

    def cancel(self, rows: Sequence[RowT]) -> list[tuple[RowT, Finish]]:
        """End these rows now, each with a Finish(FINISH_CANCELLED)."""
        ...

    def reset(self) -> None:
        """Forget every row (after a failed step)."""
        ...


class StopText:
    """Cuts a stream of text deltas before the first stop sequence.

    A delta may end with the beginning of a stop sequence that the next delta
    completes, so the longest tail that could still start one (at most the longest
    stop's length - 1 characters) is held back until it no longer can.
    """

    def __init__(self, stops: Iterable[str]):
        self.stops = tuple(s for s in stops if s)
        self.held = ""
        self.stopped = False

    def feed(self, text: str) -> str:
        """What of `text` (plus the held tail) may be streamed now."""
        if self.stopped:
            return ""
        if not self.stops:
            return text
        pending = self.held + text
        cut = min((i for i in (pending.find(s) for s in self.stops) if i >= 0), default=-1)
        if cut >= 0:
            self.stopped, self.held = True, ""
            return pending[:cut]
        keep = self._open_tail(pending)
        self.held = pending[len(pending) - keep :]
        return pending[: len(pending) - keep]

    def flush(self) -> str:
        """The held tail, at the end of a generation that did not stop on a sequence."""
        held, self.held = self.held, ""
        return held

    def _open_tail(self, text: str) -> int:
        """The length of the longest suffix of `text` that is a proper prefix of a stop."""
        longest = min(len(text), max(len(s) for s in self.stops) - 1)
        for length in range(longest, 0, -1):
            tail = text[-length:]
            if any(s.startswith(tail) for s in self.stops):
                return length
        return 0


class StopSequences:
    """A stream's chunks, fed one at a time, with their text cut at the first stop sequence.

    Token chunks carry only what may be streamed; on a stop a Finish(FINISH_STOP_SEQUENCE) ends
    the stream (`ended`: the caller stops its engine). Works for any engine (an endpoint's too: its
    server is not sent the stop sequences, so the cut is seen here and reported as one).
    """

    def __init__(self, stop_text: StopText, prompt_tokens: int):
        self.stop_text = stop_text
        self.prompt_tokens = prompt_tokens
        self.generated = 0
        self.first_time: float | None = None
        self.last_time: float | None = None
        self.ended = False

    def feed(self, chunk: Chunk) -> list[Chunk]:
        if isinstance(chunk, Failure):
            self.ended = True
            return [chunk]
        if isinstance(chunk, TokenChunk):
            self.generated += 1
            self.last_time = time.time()
            self.first_time = self.first_time or self.last_time
            out: list[Chunk] = [TokenChunk(chunk.token_id, self.stop_text.feed(chunk.text_delta))]
            if self.stop_text.stopped:
                self.ended = True
                out.append(Finish(FINISH_STOP_SEQUENCE, self.generated, self.prompt_tokens,
                                  self.first_time, self.last_time))
            return out
        self.ended = True
        text = self.stop_text.feed(chunk.text_delta)
        if self.stop_text.stopped and chunk.reason != FINISH_CANCELLED:
            return [dataclasses.replace(chunk, text_delta=text, reason=FINISH_STOP_SEQUENCE)]
        return [dataclasses.replace(chunk, text_delta=text + self.stop_text.flush())]


def with_stop_sequences(
    chunks: Generator[Chunk, None, None], stop_text: StopText, prompt_tokens: int
) -> Generator[Chunk, None, None]:
    """An engine's chunks with their text cut at the first stop sequence (StopSequences); on a
    stop the engine's generator is closed (an endpoint's stream with it, so its server stops)."""
    cut = StopSequences(stop_text, prompt_tokens)
    for chunk in chunks:
        out = cut.feed(chunk)
        if cut.ended and isinstance(chunk, TokenChunk):
            chunks.close()
        yield from out
        if cut.ended:
            return


class StreamRow:
    """The one request a StreamDecoder runs: the engine's generator and its cancel flag."""

    def __init__(self, engine: Engine, input_ids: Sequence[int], params: SamplingParams, tag: Any):
        self.tag = tag
        self.cancelled = False  # the engine asks before every forward pass
        chunks = engine.stream(input_ids, params, lambda: self.cancelled)
        self.chunks = with_stop_sequences(chunks, StopText(params.stop), len(input_ids))


class StreamDecoder:
    """One request at a time through `engine.stream` (any engine: this is how engines that
    cannot batch are served). Not thread-safe: one caller drives it."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.row: StreamRow | None = None

    @property
    def step_kind(self) -> str:
        """How the engine runs its forward passes, where it says (a speculative engine's verify)."""
        return getattr(self.engine, "step_kind", "")

    def __len__(self) -> int:
        return 0 if self.row is None else 1

    def join(self, input_ids: Sequence[int], params: SamplingParams, tag: Any = None) -> tuple[StreamRow, list[Chunk]]:
        if self.row is not None:
            raise RuntimeError("A StreamDecoder runs one request at a time")
        row = StreamRow(self.engine, input_ids, params, tag)
        first = next(row.chunks)
        if not isinstance(first, Finish):
            self.row = row
        return row, [first]

    def step(self) -> list[tuple[StreamRow, Chunk]]:
        row = self.row
        if row is None:
            return []
        chunk = next(row.chunks)
        if isinstance(chunk, Finish):
            self.row = None
        return [(row, chunk)]

    def cancel(self, rows: Sequence[StreamRow]) -> list[tuple[StreamRow, Finish]]:
        """The engine's own Finish(FINISH_CANCELLED): engines ask `should_cancel` before every
        forward pass, so the next chunk after the flag is set is that Finish, with the
        engine's counts (a speculative engine's acceptance included)."""
        row = self.row
        if row is None or row not in rows:
            return []
        row.cancelled = True
        self.row = None
        finish = next(chunk for chunk in row.chunks if isinstance(chunk, Finish))
        return [(row, finish)]

    def reset(self) -> None:
        if self.row is not None:
            self.row.chunks.close()
        self.row = None
