"""Where a page shows catalogue entries still being prepared (arena/catalogue/preparation.py)."""

from django import template

from arena.catalogue import preparation
from arena.catalogue.models import ModelEntry

register = template.Library()


@register.inclusion_tag("catalogue/_being_prepared.html")
def models_being_prepared(what: str):
    """Creation pages: each enabled entry still being prepared, by name, and that a `what`
    ("tournament", "comparison") including it waits for it."""
    return {"preparing": preparation.being_prepared(ModelEntry.objects.enabled()), "what": what}


@register.inclusion_tag("catalogue/_tournament_preparing.html")
def tournament_preparation_notice(tournament):
    """A tournament's page: whether one of its contestants is still being prepared. Before the
    reveal it names none: which model waits would hint at which match (and side) it plays."""
    if tournament.revealed:
        return {"preparing": None}
    preparing = preparation.being_prepared(tournament.contestants())
    slowest = max((p for _entry, p in preparing), key=lambda p: p.minutes_left() or 0, default=None)
    return {"preparing": slowest}


@register.inclusion_tag("catalogue/_preparations_table.html")
def preparation_table():
    """The status page: every enabled AWQ entry with a published preparation (going on, or failed)."""
    entries = list(ModelEntry.objects.enabled().filter(kind=ModelEntry.Kind.AWQ))
    found = preparation.published(entries)
    return {"rows": [(e, found[e.slug]) for e in entries if e.slug in found]}
