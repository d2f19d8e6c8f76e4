"""Fair blind conditions: both sides of a blind comparison (an anonymous battle, a tournament
match, the answers of a suite run to one prompt) generate under one token limit, the same stop
rules and output constraint, whatever their entries' own defaults say.

Longer answers win votes, and a length cut tells a blind judge which model is which ("Stopped at
128 tokens" beside "Stopped at 256 tokens"), so the limit is the comparison's: the user's, else
ARENA_BLIND_MAX_NEW_TOKENS. Stop sequences and constraints likewise come from the comparison
alone (`ModelEntry.params_with_defaults(shared=True)` drops an entry's own)."""

from __future__ import annotations

from django.conf import settings

LIMIT_SAID = "Both answers are limited to {n} tokens."
RUN_LIMIT_SAID = "Every answer is limited to {n} tokens."


def token_limit() -> int:
    """The one limit of a blind comparison whose user gave none."""
    return int(settings.ARENA_BLIND_MAX_NEW_TOKENS)


def with_limit(params: dict | None) -> dict:
    """A comparison's shared parameters with its one token limit filled in where the user gave none
    (a value given is checked where every parameter is: SamplingParams.from_dict)."""
    params = dict(params or {})
    if params.get("max_new_tokens") is None:
        params["max_new_tokens"] = token_limit()
    return params


def common_limit(*params: dict | None) -> int | None:
    """The token limit every side was given, or None when they differ (a comparison from before
    the rule) or none is stored."""
    limits = {(p or {}).get("max_new_tokens") for p in params}
    if len(limits) != 1:
        return None
    (limit,) = limits
    return limit if isinstance(limit, int) else None


def limit_said(battle) -> str:
    """What a blind battle's page says of its limit ("" for one from before the rule, whose sides
    had their entries' own)."""
    limit = common_limit(battle.left.params, battle.right.params)
    return LIMIT_SAID.format(n=limit) if limit else ""
