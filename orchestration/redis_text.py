"""Redis answers as text. The orchestrator's clients read bytes (no decode_responses, as the
workers' and the application's clients share keys with them), and redis-py types every
answer as bytes or str: these say which once, for the type checker and the reader."""

from __future__ import annotations

from collections.abc import Mapping


def text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def text_hash(raw: Mapping[bytes | str, bytes | str]) -> dict[str, str]:
    """A hash from HGETALL, keys and values as text."""
    return {text(k): text(v) for k, v in raw.items()}
