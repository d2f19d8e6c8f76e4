"""From a generation's events to OpenAI's response shapes: plain functions, no I/O.

- `completion(...)`: the `chat.completion` object of a non-streaming request;
- `StreamTranslator`: each event of the generation's Redis Stream (inference.protocol)
  to the server-sent events of a streaming one: `chat.completion.chunk`s (the role first,
  one per token, then the finish reason, then the usage if asked), then `data: [DONE]`;
  SSE comments (`: loading 3.0s`) while the model loads, which clients ignore; a failure
  or a cancellation mid-stream is one `data: {"error": {...}}` event, and the stream ends.
"""

from __future__ import annotations

import json
from typing import Any

from inference import protocol as p

from .errors import OpenAIError, generation_cancelled, generation_failed

DONE_LINE = "data: [DONE]\n\n"


def completion_id(generation_id) -> str:
    """The completion's id names its generation (GET /api/v1/generations/<id>, /g/<id>/)."""
    return f"chatcmpl-{generation_id}"


def usage(prompt_tokens: int | None, completion_tokens: int | None) -> dict[str, int]:
    prompt_tokens, completion_tokens = prompt_tokens or 0, completion_tokens or 0
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def finish_reason_of(reason: str | None) -> str:
    """OpenAI's finish_reason for ours: "length" for an answer cut at max_tokens; "stop" for one the model
    ended and for one cut at a stop sequence (OpenAI does not tell those apart; our own API does)."""
    return "length" if reason == "length" else "stop"


def completion(*, id: str, created: int, model: str, text: str, finish_reason: str,
               prompt_tokens: int | None, completion_tokens: int | None) -> dict[str, Any]:
    return {
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text, "refusal": None},
            "logprobs": None,
            "finish_reason": finish_reason_of(finish_reason),
        }],
        "usage": usage(prompt_tokens, completion_tokens),
        "system_fingerprint": None,
    }


def sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, separators=(',', ':'))}\n\n"


def comment(text: str) -> str:
    """An SSE comment line (a keep-alive the client's decoder skips); one line, always."""
    return ": " + " ".join(text.split()) + "\n\n"


class StreamTranslator:
    """Feed it the generation's events in order; it returns the SSE text to send for each."""

    def __init__(self, *, id: str, created: int, model: str, include_usage: bool = False):
        self.id, self.created, self.model, self.include_usage = id, created, model, include_usage
        self.role_sent = False
        self.finished = False  # a terminal event was translated: nothing more to send
        self.text: list[str] = []
        self.tokens = p.StreamedText()  # what the token events brought (the text sent is `text`)

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }
        if self.include_usage:
            body["usage"] = None  # as OpenAI: null on every chunk but the last
        return body

    def usage_chunk(self, prompt_tokens: int | None, completion_tokens: int | None) -> dict[str, Any]:
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                "choices": [], "usage": usage(prompt_tokens, completion_tokens)}

    def feed(self, ev: dict[str, Any]) -> list[str]:
        if self.finished:
            return []
        kind = ev["type"]
        if kind == p.QUEUED:  # waiting for a free slot (arena/generations/admission.py)
            return [comment(f"queued {ev.get('position')} of {ev.get('waiting')}")]
        if kind == p.LOADING:
            progress = f" {ev['progress']}" if ev.get("progress") else ""
            return [comment(f"loading {float(ev.get('elapsed_s') or 0):.1f}s{progress}")]
        if kind == p.STARTED:
            return self._role()
        if kind == p.TOKEN:
            return self.token(ev)
        if kind == p.DONE:
            metrics = ev.get("metrics") or {}
            return self.rest(ev.get("text") or "") + self.done(finish_reason_of(ev.get("finish_reason")),
                                                               metrics.get("prompt_tokens"),
                                                               metrics.get("generated_tokens"))
        if kind == p.FAILED:
            return self.error(generation_failed(ev.get("code"), ev.get("reason", "")))
        if kind == p.CANCELLED:
            return self.error(generation_cancelled())
        return []  # queued, or a kind a newer worker writes: nothing to say

    def token(self, ev: dict[str, Any]) -> list[str]:
        """A token's text, each character once and in order. After a gap (a token that never came:
        a Redis restarted empty loses what it held) nothing more is sent until the end, whose final
        text fills it: a delta cannot be taken back, so a hole in the answer would stay a hole."""
        if self.tokens.gap:
            return []
        new = self.tokens.add(ev)
        if self.tokens.gap or not new:
            return []  # held for the end; a token whose text is held back (a possible stop sequence); a copy
        return self._content(new)

    def _content(self, text: str) -> list[str]:
        self.text.append(text)
        return [*self._role(), sse(self.chunk({"content": text}))]

    def rest(self, final_text: str) -> list[str]:
        """What the final text holds past the tokens sent (none from a worker, whose tokens add
        up to its DONE text, unless some never came; all of it when the outcome came from the
        database instead)."""
        sent = "".join(self.text)
        if len(final_text) <= len(sent) or not final_text.startswith(sent):
            return []
        return self._content(final_text[len(sent):])

    def done(self, finish_reason: str, prompt_tokens: int | None, completion_tokens: int | None) -> list[str]:
        out = [*self._role(), sse(self.chunk({}, finish_reason))]
        if self.include_usage:
            out.append(sse(self.usage_chunk(prompt_tokens, completion_tokens)))
        self.finished = True
        return [*out, DONE_LINE]

    def error(self, err: OpenAIError) -> list[str]:
        """The openai client raises APIError on a `data:` event that holds an `error`."""
        self.finished = True
        return [sse(err.body())]

    def _role(self) -> list[str]:
        if self.role_sent:
            return []
        self.role_sent = True
        return [sse(self.chunk({"role": "assistant", "content": ""}))]
