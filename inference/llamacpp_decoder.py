"""The llamacpp engine's decoder: llama.cpp called in this process, with no HTTP in between.

Each request runs xllamacpp's `handle_chat_completions` (`handle_completions` for a base
model) on a thread of its own: the call blocks in C++, without the GIL, while llama.cpp
batches every slot's tokens, and calls back into Python with each OpenAI chunk JSON, as
its server would have sent it. The callback reads it as any endpoint's stream is read
(`endpoint.StreamReader`), cuts the text at the stop sequences and puts the chunks in the
decoder's inbox, which `step` hands the scheduler. Returning True from the callback ends
the request: llama.cpp cancels its task and frees its slot at once, so a cancelled row
stops at its next token (measured: the slot is idle when the call returns).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from inference import protocol
from inference.chunks import Chunk, Failure
from inference.decoding import StopSequences, StopText
from inference.endpoint import StreamReader, ThreadedDecoder, ThreadedRow, completion_request
from inference.protocol import SamplingParams
from inference.structured import lark_regex_grammar

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LlamaCppEngine:
    """llama.cpp serving one GGUF in this process (`inference.decoding.Prompter`)."""

    server: Any = field(repr=False, compare=False)  # xllamacpp.Server
    model: str  # the file's name, as llama.cpp's server would be asked for it
    base: bool = False  # a base model: the conversation as plain text to continue, no chat template
    max_concurrency: int = 0  # llama.cpp's slots: requests decoded at once

    counts_tokens = False  # llama.cpp tokenises; its usage says how many tokens there were

    def encode(self, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        return list(messages)

    def check_context(self, prompt_tokens: int, params: SamplingParams) -> int:
        return params.max_new_tokens  # llama.cpp knows its context and refuses what does not fit

    def request(self, messages: list[dict[str, str]], params: SamplingParams) -> tuple[str, dict[str, Any]]:
        """The route and OpenAI body of one streamed request, as to llama.cpp's server."""
        return completion_request(self.model, self.base, messages, params, constraint(params))

    def handler(self, route: str) -> Callable[..., Any]:
        """llama.cpp's handler for `route`: (body, callback) streams, (dict body) answers whole."""
        if route == "/completions":
            return self.server.handle_completions
        return self.server.handle_chat_completions


def constraint(params: SamplingParams) -> dict[str, Any]:
    """llama.cpp's own `json_schema`, or a regex as a `%llguidance` grammar (its wheel is built
    with llguidance)."""
    if params.json_schema is not None:
        return {"json_schema": params.json_schema}
    if params.regex is not None:
        return {"grammar": lark_regex_grammar(params.regex)}
    return {}


class LlamaCppRow(ThreadedRow):
    """One request: llama.cpp's blocking call on the row's thread, its callback feeding the inbox."""

    def __init__(self, decoder: LlamaCppDecoder, messages: list[dict[str, str]], params: SamplingParams, tag: Any):
        super().__init__(decoder.inbox, tag, "llamacpp-request")
        route, body = decoder.engine.request(messages, params)
        self._call = decoder.engine.handler(route)
        self._body = json.dumps(body)
        self._reader = StreamReader(error_status=True)
        self._cut = StopSequences(StopText(params.stop), 0)

    def _run(self) -> None:
        try:
            self._call(self._body, self._on_payload)
            if not self._cut.ended:
                self._put(self._reader.close())  # llama.cpp's "[DONE]" is not passed on: the end is here
        except Exception as exc:  # llama.cpp raised: this request fails alone
            log.exception("llama.cpp request failed")
            self._put(Failure(f"llama.cpp failed: {exc}", protocol.ENGINE_ERROR))

    def _on_payload(self, data: str) -> bool:
        """llama.cpp's callback, for each chunk; True ends the request (cancelled, or it ended here)."""
        if self.cancelled.is_set():
            return True
        try:
            for chunk in self._reader.feed(data):
                self._put(chunk)
        except Exception as exc:  # xllamacpp would swallow it and end the call without a word
            log.exception("Reading llama.cpp's chunk failed")
            self._put(Failure(f"Reading llama.cpp's answer failed: {exc}", protocol.ENGINE_ERROR))
        return self._cut.ended

    def _put(self, chunk: Chunk) -> None:
        if self._cut.ended or self.cancelled.is_set():
            return  # after a stop sequence, nothing more; a cancelled row's Finish has been given
        for out in self._cut.feed(chunk):
            self._inbox.put((self, out))


class LlamaCppDecoder(ThreadedDecoder[LlamaCppRow]):
    """Requests to llama.cpp in this process, up to its slots at once (see the module's docstring)."""

    def __init__(self, engine: LlamaCppEngine):
        super().__init__()
        self.engine = engine

    def join(self, messages: Sequence[Any], params: SamplingParams, tag: Any = None) -> tuple[LlamaCppRow, list[Chunk]]:
        return self.start(LlamaCppRow(self, list(messages), params, tag))
