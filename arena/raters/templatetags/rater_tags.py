"""The run page's "Raters by link" section, for the run's owner only."""

from __future__ import annotations

from django import template

from arena.raters.agreement import FLOOR
from arena.raters.forms import RaterLinkForm
from arena.raters.overview import overview
from arena.raters.views import CLOCK, NEW_RATER_LINKS

register = template.Library()


@register.inclusion_tag("raters/_links.html", takes_context=True)
def rater_links(context, run):
    request = context.get("request")
    user = getattr(request, "user", None)
    if run is None or user is None or not user.is_authenticated or run.owner_id != user.id or run.judge_id:
        return {"show": False}
    seen = overview(run, CLOCK())
    session = getattr(request, "session", None)
    waiting = dict(session.get(NEW_RATER_LINKS, {})) if session is not None else {}
    rows = [{"link": row.link, "given": row.given, "state": row.state, "new_url": waiting.pop(str(row.link.id), "")}
            for row in seen.rows]
    if session is not None and NEW_RATER_LINKS in session:
        session[NEW_RATER_LINKS] = waiting
    return {"show": True, "run": run, "rows": rows, "form": RaterLinkForm.blank(CLOCK()), "floor": FLOOR,
            "agreement": seen.agreement, "csrf_token": context.get("csrf_token")}
