"""Readiness figures and the blind rule: how long a generation waited for its model and in line.

How long a model took to be ready tells a warm model from a cold one. While a user has a blind
verdict pending (an anonymous battle not voted yet, a tournament not revealed), the models of
that match are the ones just loaded or kept warm: a one-token playground request to each entry
would show which pair was drawn (0.25 s against 2.02 s) before the vote. So, for such a user,
the load and queue figures of EVERY generation of theirs are withheld (not only those on the
match's entries: withholding only those would name them) until the match is revealed, on every
surface: pages and the metrics panel ("—", the reason in its tooltip), the JSON API, the
WebSocket frames (no "loading" event, no STARTED queue_s, no raw timestamps in the metrics),
the OpenAI-compatible stream's comments and the exports (docs/blind.md#readiness).

The rule (which users have a pending blind verdict) belongs to battles, above this app: it
registers it here (`register`) from its AppConfig.ready(). Hiding too much is safe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inference import protocol as p

# Shown in place of a withheld figure's reason (the metrics panel's tooltip, the API's field).
WITHHELD = ("Withheld while you have a blind match to judge: how long a model took to be ready would tell "
            "which models were drawn. Shown once it is revealed.")
# Worker timestamps from which the wait for the model could be worked out (the rates stay).
TIMING_KEYS = frozenset({"arrival_time", "first_scheduled_time", "first_token_time", "last_token_time",
                         "finished_time", "time_in_queue", "pair_wait_s"})

Rule = Callable[[Any], bool]
_rule: Rule | None = None


def register(rule: Rule) -> None:
    """`rule(user_id)`: whether that user has a blind verdict pending now."""
    global _rule
    _rule = rule


def withheld(owner_id) -> bool:
    """Whether the load and queue figures of `owner_id`'s generations are withheld now."""
    return bool(_rule is not None and owner_id is not None and _rule(owner_id))


def redact_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """A worker's per-request metrics without the timestamps that would give the wait away."""
    return {k: v for k, v in metrics.items() if k not in TIMING_KEYS}


def redact_event(ev: dict[str, Any]) -> dict[str, Any] | None:
    """A stream event as a withheld viewer gets it: None for a LOADING event (its absence reads the
    same as a warm model's), STARTED without its queue time, a terminal event's metrics without timestamps."""
    kind = ev.get("type")
    if kind == p.LOADING:
        return None
    if kind == p.STARTED:
        return {k: v for k, v in ev.items() if k != "queue_s"}
    if isinstance(ev.get("metrics"), dict):
        return {**ev, "metrics": redact_metrics(ev["metrics"])}
    return ev
