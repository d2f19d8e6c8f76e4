"""Which catalogue entries a viewer must not see named: catalogue's way to ask the blind rule.

The rule belongs to battles (arena/battles/secrecy.py: the models of a viewer's pending blind
verdicts), which sit above catalogue; battles registers it here from its AppConfig.ready(), so
catalogue's own pages (the ModelEntry admin's preparation column, the creation pages' notice of
entries being prepared) apply it without importing the apps above.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import QuerySet

from .models import ModelEntry

Rule = Callable[[object], QuerySet[ModelEntry]]
_rule: Rule | None = None


def register(rule: Rule) -> None:
    """`rule(viewer)`: the entries `viewer` must not see named."""
    global _rule
    _rule = rule


def hidden_from(viewer) -> QuerySet[ModelEntry]:
    """The entries `viewer` must not see named (none before a rule is registered)."""
    return _rule(viewer) if _rule is not None else ModelEntry.objects.none()
