from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from . import cache, frontier, judges, measures, ratings, records, style, uncertainty, validity
from .agreement import agreement
from .charts import Name, interval_chart
from .records import MODES, PERIODS, SOURCES, battle_records, default_mode, flagged_count, names, tags


@login_required
def leaderboard(request):
    """Ratings of every model from the team's verdicts: table, interval chart, win-rate matrix,
    quality against speed and memory; people's verdicts unless asked (source), with style
    control on request (style=1: ratings with and without it, and the style coefficients)."""
    mode = request.GET.get("mode") if request.GET.get("mode") in MODES else cache.cached("mode", (), default_mode)
    period = request.GET.get("days") if request.GET.get("days") in PERIODS else "all"
    tag_choices = cache.cached("tags", (), tags)
    tag = request.GET.get("tag") if request.GET.get("tag") in tag_choices else ""
    flagged = request.GET.get("flagged") == "include"  # blind verdicts where an answer names a contestant
    source = request.GET.get("source") if request.GET.get("source") in SOURCES else "human"
    controlled = request.GET.get("style") == "1"
    # Everything computed from the verdicts is the same for every viewer: cached per filter
    # until a verdict lands (cache.py). The names, the structured-output rates and the frontier
    # (the viewer's secret models left out, live workers' memory) are read on each request.
    results = cache.cached("results", (mode, period, tag, flagged, source, controlled),
                           lambda: _results(mode, PERIODS[period], tag, flagged, source, controlled))
    plain, fit = results["plain"], results["fit"]
    rows = fit.ratings if fit else plain
    labels = names()
    without = {r.model: r for r in plain}
    threshold = settings.ARENA_LEADERBOARD_PROVISIONAL_VERDICTS
    table = [{"row": r, "name": labels.get(r.model) or Name(r.model, r.model),
              "from_tournaments": results["from_tournaments"].get(r.model, 0), "plain": without[r.model],
              "provisional": uncertainty.provisional(r.battles, threshold)}
             for r in rows]
    # Two entries to tell apart (GET a, b; the top two until chosen), at their head-to-head rate.
    first, second = uncertainty.default_pair([r.model for r in plain])
    first, second = request.GET.get("a", first), request.GET.get("b", second)
    estimate = uncertainty.pair_estimate(first, second, {r.model: r.rating for r in plain}, results["cells"])
    context = {
        "table": table, "modes": MODES, "mode": mode, "periods": PERIODS, "period": period,
        "tags": tag_choices, "tag": tag, "flagged": flagged,
        "flagged_count": results["flagged_count"],
        "sources": SOURCES, "source": source, "source_label": SOURCES[source],
        "agreement": results["agreement"],
        "style": controlled, "coefficients": fit.coefficients if fit else [],
        "provisional_threshold": threshold, "provisional_count": sum(1 for t in table if t["provisional"]),
        "pair": (first, second), "estimate": estimate,
        "estimate_names": (labels.get(first) or Name(first, first), labels.get(second) or Name(second, second)),
        "battles": results["battles"], "tournament_battles": results["tournament_battles"],
        "chart": interval_chart([(t["row"].model, t["name"], t["row"].rating, t["row"].lower, t["row"].upper)
                                 for t in table]),
        "matrix": _matrix(table, results["cells"]),
        "validity": validity.rates(labels),
        "frontier": frontier.charts(measures.points(request.user, {r.model: r.rating for r in rows}, labels)),
        "reliability": judges.rows(cache.cached("reliability", (), judges.panel), labels),
    }
    return render(request, "leaderboard/leaderboard.html", context)


def _results(mode: str, days: int | None, tag: str, flagged: bool, source: str, controlled: bool) -> dict:
    """What the page shows of one filter's verdicts: ratings (with style control if asked), the
    win matrix, the agreement, the counts."""
    verdicts = battle_records(mode, days, tag, flagged, source)
    triples = [(left, right, score) for left, right, score, _t in verdicts]
    return {
        "plain": ratings.leaderboard(triples),
        "fit": _style_fit(mode, days, tag, flagged, source) if controlled else None,
        "from_tournaments": _tournament_counts(verdicts),
        "flagged_count": flagged_count(mode, days, tag, source),
        "agreement": agreement(records.agreement_records(mode, days, tag, flagged)),
        "battles": len(verdicts), "tournament_battles": sum(1 for *_x, t in verdicts if t),
        "cells": ratings.win_matrix(triples),
    }


def _style_fit(*filters) -> ratings.StyleFit:
    """The filter's verdicts fitted with style covariates (length, Markdown elements)."""
    rows = records.style_records(*filters)
    x = style.design_matrix([(style.answer_style(*left), style.answer_style(*right)) for *_x, left, right in rows])
    labels = [style.LABELS[f] for f in style.FEATURES]
    return ratings.style_leaderboard([(left, right, score) for left, right, score, *_a in rows], x, labels)


def _tournament_counts(records) -> dict[str, int]:
    counts: dict[str, int] = {}
    for left, right, _score, tournament in records:
        if tournament:
            for slug in (left, right):
                counts[slug] = counts.get(slug, 0) + 1
    return counts


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
