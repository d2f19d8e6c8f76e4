"""Where a page shows catalogue entries still being prepared (arena/catalogue/preparation.py)."""

from django import template

from arena.catalogue import hiding, preparation
from arena.catalogue.models import ModelEntry

register = template.Library()


@register.inclusion_tag("catalogue/_being_prepared.html", takes_context=True)
def models_being_prepared(context, what: str):
    """Creation pages: each enabled entry still being prepared, by name, and that a `what`
    ("tournament", "comparison") including it waits for it; none of the viewer's own unrevealed
    blind verdicts' contestants (which one is being prepared would name a match's pair)."""
    request = context.get("request")
    entries = ModelEntry.objects.enabled()
    if request is not None:
        entries = entries.exclude(id__in=hiding.hidden_from(request.user).values("id"))
    return {"preparing": preparation.being_prepared(entries), "what": what}


@register.inclusion_tag("catalogue/_tournament_preparing.html")
def tournament_preparation_notice(tournament):
    """A tournament's page: whether one of its contestants is still being prepared. Before the
    reveal it names none: which model waits would hint at which match (and side) it plays."""
    if tournament.revealed:
        return {"preparing": None}
    preparing = preparation.being_prepared(tournament.contestants())
    slowest = max((p for _entry, p in preparing), key=lambda p: p.minutes_left() or 0, default=None)
    return {"preparing": slowest}
