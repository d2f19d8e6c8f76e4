"""How long a conversation may grow before it must start afresh.

A follow-up copies the whole conversation so far (every turn, both answers of each) into
the new generations, and the OpenAI-compatible API and a tournament's API take one whole.
Both are bounded: at most `ARENA_MAX_CONVERSATION_TURNS` user turns (20; 0 turns it off),
the new prompt included, and at most `ARENA_MAX_CONVERSATION_CHARS` characters in all
(system prompt, every earlier turn and the prompt; unset, it is `ARENA_MAX_PROMPT_CHARS`, the
limit on one prompt). `check` raises `ConversationTooLong` before anything is created; pages
show its message beside the form, the APIs answer 400 naming the limit (it is a `Refusal`)."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

from arena.api.http import Refusal

TURNS = "conversation_turns"
CHARS = "conversation_chars"


class ConversationTooLong(Refusal):
    """`limit` is TURNS or CHARS; `allowed` and `current` the numbers; `message` says so (pages
    add what to do instead); the JSON APIs name the limit in their own words (`as_json`)."""

    code = "conversation_too_long"

    def __init__(self, limit: str, *, allowed: int, current: int, message: str):
        super().__init__(message)
        self.limit, self.allowed, self.current, self.message = limit, allowed, current, message

    def as_json(self) -> dict:
        if self.limit == TURNS:
            message = (f"The conversation has {self.current} user turns, at most {self.allowed} allowed "
                       "(the conversation limit).")
        else:
            message = f"The conversation has {self.current} characters in all, at most {self.allowed} allowed."
        return {"error": {"code": self.code, "message": message, "limit": self.limit, "allowed": self.allowed,
                          "current": self.current}}


def max_turns() -> int:
    return settings.ARENA_MAX_CONVERSATION_TURNS


def max_chars() -> int:
    return settings.ARENA_MAX_CONVERSATION_CHARS or settings.ARENA_MAX_PROMPT_CHARS


def turns(history: Iterable[dict]) -> int:
    """User turns in a conversation whose next prompt follows `history`, that prompt included."""
    return 1 + sum(1 for t in history if t.get("role") == "user")


def chars(*, prompt: str, history: Iterable[dict], system_prompt: str = "") -> int:
    return len(system_prompt) + len(prompt) + sum(len(t.get("content") or "") for t in history)


def check(*, prompt: str, history: list[dict], system_prompt: str = "") -> None:
    """Raise ConversationTooLong if this conversation (history, then `prompt`) is past a limit."""
    allowed = max_turns()
    n = turns(history)
    if allowed and n > allowed:
        raise ConversationTooLong(TURNS, allowed=allowed, current=n, message=(
            f"This conversation would have {n} turns, at most {allowed} allowed."))
    allowed, n = max_chars(), chars(prompt=prompt, history=history, system_prompt=system_prompt)
    if n > allowed:
        raise ConversationTooLong(CHARS, allowed=allowed, current=n, message=(
            f"This conversation would be {n} characters in all, at most {allowed} allowed."))
