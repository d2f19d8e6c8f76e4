"""The run page's "Raters by link" section, for the run's owner only."""

from __future__ import annotations

from django import template

from arena.raters import actions
from arena.raters.agreement import FLOOR, agreement
from arena.raters.forms import RaterLinkForm
from arena.raters.models import RaterLink
from arena.raters.views import CLOCK, NEW_RATER_LINKS
from arena.suite_runs.models import RaterVerdict

register = template.Library()


@register.inclusion_tag("raters/_links.html", takes_context=True)
def rater_links(context, run):
    request = context.get("request")
    user = getattr(request, "user", None)
    if run is None or user is None or not user.is_authenticated or run.owner_id != user.id or run.judge_id:
        return {"show": False}
    now = CLOCK()
    actions.settle(run, now)
    ratings: dict[int, dict] = {}
    for link_id, left, right, outcome in RaterVerdict.objects.filter(run=run).values_list(
            "rater_id", "battle__left_id", "battle__right_id", "battle__outcome"):
        ratings.setdefault(link_id, {})[(str(left), str(right))] = outcome
    session = getattr(request, "session", None)
    waiting = dict(session.get(NEW_RATER_LINKS, {})) if session is not None else {}
    rows = []
    for link in RaterLink.objects.filter(run=run):
        given = len(ratings.get(link.id, {}))
        rows.append({"link": link, "given": given, "state": link.state(now, given),
                     "new_url": waiting.pop(str(link.id), "")})
    if session is not None and NEW_RATER_LINKS in session:
        session[NEW_RATER_LINKS] = waiting
    return {"show": True, "run": run, "rows": rows, "form": RaterLinkForm.blank(now), "floor": FLOOR,
            "agreement": agreement(ratings, seed=run.seed), "csrf_token": context.get("csrf_token")}
