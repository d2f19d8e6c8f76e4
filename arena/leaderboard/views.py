from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import QueryDict
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from arena.battles.models import ReasonTag
from arena.teams.membership import current_team

from . import board, by_category, cache, frontier, judges, records, similar, uncertainty, validity, why
from .charts import Name, interval_chart
from .records import KINDS, MODES, PERIODS, tags

REMEMBERED = "leaderboard-filters"  # the session key of the viewer's last choice of filters


@login_required
def leaderboard(request):
    """Ratings of every model from the team's verdicts: table (by entry or by base-model family),
    interval chart, win-rate matrix, quality against speed and memory, and a decision summary.
    It opens on every verdict the viewer may see, each kind named and counted, or on the viewer's
    last choice of filters (a link that names filters wins)."""
    f = _filters(request)
    b = board.board(request.user, f)
    res, table, labels = b.results, b.table, b.labels
    plain = res["plain"]
    threshold = settings.ARENA_LEADERBOARD_PROVISIONAL_VERDICTS
    # Two entries to tell apart (GET a, b; the top two until chosen), at their head-to-head rate.
    first, second = uncertainty.default_pair([r.model for r in plain])
    first, second = request.GET.get("a", first), request.GET.get("b", second)
    estimate = uncertainty.pair_estimate(first, second, {r.model: r.rating for r in plain}, res["cells"])
    context = {
        "filters": f, "table": table, "families": b.families, "summary": b.summary,
        "mode": f.mode, "mode_label": MODES[f.mode], "periods": PERIODS, "period": f.period,
        "tags": tags(request.user), "tag": f.tag, "flagged": f.flagged,
        "flagged_count": res["flagged_count"], "sources": board.sources(f, res["kinds"]),
        "kinds": KINDS, "unreliable_left_out": res["unreliable_left_out"],
        "agreement": res["agreement"],
        "style": f.style, "coefficients": res["fit"].coefficients if res["fit"] else [],
        "provisional_threshold": threshold, "provisional_count": sum(1 for t in table if t["provisional"]),
        "pair": (first, second), "estimate": estimate,
        "estimate_names": (labels.get(first) or Name(first, first), labels.get(second) or Name(second, second)),
        "battles": res["battles"], "tournament_battles": res["tournament_battles"],
        "chart": interval_chart([(t["row"].model, t["name"], t["row"].rating, t["row"].lower, t["row"].upper,
                                  t["provisional"]) for t in table]),
        "matrix": _matrix(table, res["cells"]),
        "validity": validity.rates(labels),
        "why": _why(f, [t["row"].model for t in table], labels),
        "frontier": frontier.charts(b.points),
        "reliability": judges.rows(cache.cached("reliability", (), judges.panel), labels),
        "by_category": by_category.cached_table(f, labels, current_team(request.user)),
        "scope": f.whose.scope, "scopes": _scopes(request.user, f), "team": current_team(request.user),
    }
    return render(request, "leaderboard/leaderboard.html", context)


def _filters(request) -> board.Filters:
    """The filters asked for (or remembered), narrowed to whose verdicts (`scope`): everyone's
    when a user in no team asks for their team's."""
    query = _filter_query(request)
    f = board.parse(query, tags(request.user))
    return board.scoped(f, query, request.user) or f


def _scopes(user, f: board.Filters) -> list[dict]:
    """The scope switch: each choice with its label and link (the team's only for a user in a team)."""
    shown = [name for name in board.SCOPES if name != "team" or current_team(user) is not None]
    return [{"key": name, "label": board.SCOPES[name], "current": name == f.whose.scope,
             "url": f.query(whose=records.Whose(name))} for name in shown]


def _why(f, order: list[str], labels: dict) -> list[dict]:
    """The reasons each contestant won and lost by (why.py), in the table's order, under the
    page's filters (people's verdicts of the kinds shown): one row per contestant with any."""
    rows = cache.cached("why", f.key(), lambda: why.count(records.reason_records(f.mode, f.days, f.tag, f.flagged,
                                                                                 f.kinds, f.whose), order))
    names = ReasonTag.labels()
    return [{"slug": w.model, "name": labels.get(w.model) or Name(w.model, w.model),
             "cells": [(how, w.verdicts[how], [(names.get(slug, slug), n) for slug, n in w.reasons[how]])
                       for how in (why.WON, why.LOST, why.EVEN)]} for w in rows]


def _filter_query(request) -> QueryDict:
    """The query the filters are read from: the request's own when it names any filter (and then
    remembered in the session), else the viewer's last one, else none (every verdict)."""
    if any(name in request.GET for name in board.FILTER_PARAMS):
        kept = QueryDict(mutable=True)
        for name in board.FILTER_PARAMS:
            if name in request.GET:
                kept.setlist(name, request.GET.getlist(name))
        request.session[REMEMBERED] = kept.urlencode()
        return request.GET
    return QueryDict(request.session.get(REMEMBERED, ""))


def _matrix(table: list[dict], cells: dict) -> list[dict]:
    """Rows and columns in rating order; each cell the row's win rate against the column."""
    order = [(t["row"].model, t["name"]) for t in table]
    matrix = []
    for slug, name in order:
        row = []
        for other, other_name in order:
            rate, n = cells.get((slug, other), (None, 0))
            hue = None if rate is None else round(rate * 120)  # red (0) to green (120)
            row.append({"rate": rate, "n": n, "hue": hue, "self": slug == other, "against": other_name})
        matrix.append({"slug": slug, "name": name, "cells": row})
    return matrix


MAX_LIKE_CHARS = 20_000


@require_http_methods(["GET", "POST"])
@login_required
def like(request):
    """Prompts like this one: the ranking fitted on the verdicts (the viewer's last filters) whose
    prompts are most like a pasted one, with the similarity used said on the page. POST: a prompt
    is private text, kept out of URLs and logs."""
    prompt, problem, result = "", "", None
    if request.method == "POST":
        prompt = request.POST.get("prompt", "")
        if not prompt.strip():
            problem = "Paste a prompt."
        elif len(prompt) > MAX_LIKE_CHARS:
            problem = f"A prompt of at most {MAX_LIKE_CHARS:,} characters, please."
        else:
            result = by_category.like(_filters(request), prompt, records.names())
    status = 400 if problem else 200
    return render(request, "leaderboard/like.html", {"prompt": prompt, "problem": problem, "result": result,
                                                     "method": similar.METHOD,
                                                     "max_chars": MAX_LIKE_CHARS}, status=status)
