"""What every engine yields: typed chunks of a generation, free of torch.

An engine's stream is TokenChunks, then exactly one end: a Finish, or a Failure for
a request that failed alone (an endpoint's error) while the worker goes on.
"""

from __future__ import annotations

from dataclasses import dataclass

FINISH_STOP = "stop"  # the model ended its answer (an end-of-sequence token, a complete grammar)
FINISH_LENGTH = "length"  # cut at max_new_tokens (or where the context was full)
FINISH_STOP_SEQUENCE = "stop_sequence"  # cut before one of the request's stop sequences
FINISH_CANCELLED = "cancelled"


@dataclass(frozen=True)
class TokenChunk:
    token_id: int  # -1 where the engine does not say (a server's text delta)
    text_delta: str  # may be "" while a multi-byte character is still incomplete


@dataclass(frozen=True)
class Finish:
    reason: str  # FINISH_STOP | FINISH_LENGTH | FINISH_STOP_SEQUENCE | FINISH_CANCELLED
    generated_tokens: int  # tokens yielded as TokenChunks (an end-of-sequence token is not one)
    prompt_tokens: int
    first_token_time: float | None  # time.time() of the first / last yielded token
    last_token_time: float | None
    text_delta: str = ""  # text held back at the end (an unfinished UTF-8 sequence)
    # Speculative decoding: proposals verified by the target, and how many it kept.
    proposed_tokens: int = 0
    accepted_tokens: int = 0


@dataclass(frozen=True)
class Failure:
    """This request failed on its own (the worker goes on): a reason a user can read."""

    reason: str
    code: str


Chunk = TokenChunk | Finish | Failure


class PromptTooLong(ValueError):
    def __init__(self, prompt_tokens: int, context_length: int):
        self.prompt_tokens = prompt_tokens
        self.context_length = context_length
        super().__init__(
            f"The prompt is {prompt_tokens} tokens long, but this model's context holds only "
            f"{context_length} tokens, the answer included. Shorten the prompt."
        )
