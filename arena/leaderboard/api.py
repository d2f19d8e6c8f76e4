"""The leaderboard's JSON API: the same board as the page (arena.leaderboard.board), for the same
filters given as query parameters; with none, every verdict the caller may see. `scope=mine`
counts only the verdicts of the caller's own work, `scope=team` those of their current team's (every
member's; a caller in no team: 400). Nothing is remembered between calls: a call's filters are its own."""

from __future__ import annotations

from django.http import JsonResponse

from arena.accounts.bearer import token_required
from arena.api.http import error, json_body, methods
from arena.teams.membership import NO_TEAM, current_team

from . import board, by_category, records
from .records import tags

MAX_LIKE_CHARS = 20_000

BAD_FILTER = "A filter has a value it does not take; `fields` says which."


class FilterRefused(Exception):
    def __init__(self, response):
        super().__init__("filter refused")
        self.response = response


def _filters(request) -> board.Filters:
    """The call's filters, scope included; FilterRefused with the 400 to give for a wrong one."""
    if wrong := board.refused(request.GET):
        raise FilterRefused(error(400, BAD_FILTER, wrong))
    f = board.scoped(board.parse(request.GET, tags(request.user)), request.GET, request.user)
    if f is None:
        raise FilterRefused(error(400, NO_TEAM, {"scope": NO_TEAM}))
    return f


def _row_json(t: dict) -> dict:
    r = t["row"]
    return {"model": r.model, "label": t["name"].label, "name": t["name"].full,
            "family": t["family"].key, "variant": t["family"].variant,
            "rank": r.rank, "rank_range": r.rank_range, "rank_best": r.rank_best, "rank_worst": r.rank_worst,
            "rating": r.rating, "interval": [r.lower, r.upper], "battles": r.battles, "win_rate": r.win_rate,
            "from_tournaments": t["from_tournaments"], "provisional": t["provisional"],
            "provisional_floor": t["provisional_floor"], "rank_shown": t["rank_shown"], "rating_sd": r.sd}


def board_json(b: board.Board) -> dict:
    f, res = b.filters, b.results
    line = board.sources(f, res["kinds"])
    return {
        "filters": {"kinds": sorted(f.kinds), "mode": f.mode, "days": f.days, "tag": f.tag, "flagged": f.flagged,
                    "style": f.style, "unreliable": f.unreliable, "scope": f.whose.scope},
        "verdicts": res["battles"], "tournament_verdicts": res["tournament_battles"],
        "sources": {k["key"]: {"label": k["label"], "count": k["count"], "shown": k["shown"]} for k in line["kinds"]},
        "flagged_left_out": 0 if f.flagged else res["flagged_count"],
        "unreliable_left_out": res["unreliable_left_out"],
        "entries": [_row_json(t) for t in b.table],
        "families": [{"family": fam["key"], "name": fam["name"],
                      "models": [t["row"].model for t in fam["rows"]]} for fam in b.families],
        "decision": b.summary.as_json(),
    }


@methods("GET")
@token_required
def leaderboard(request):
    """GET /api/v1/leaderboard: ratings, sources counted, families and the decision summary."""
    try:
        f = _filters(request)
    except FilterRefused as exc:
        return exc.response
    return JsonResponse(board_json(board.board(request.user, f)))


@methods("GET")
@token_required
def categories(request):
    """GET /api/v1/leaderboard/categories: each category's entries (rating, interval, win rate with
    its Wilson interval, verdicts, enough or not), over the same filters as the leaderboard."""
    try:
        f = _filters(request)
    except FilterRefused as exc:
        return exc.response
    table = by_category.cached_table(f, records.names(), current_team(request.user))
    out = []
    for index, column in enumerate(table["columns"]):
        entries = [{"model": row["model"], "label": row["name"].label, **cell.as_json()}
                   for row in table["rows"] if (cell := row["cells"][index]) is not None]
        out.append({"name": column["name"] or None, "verdicts": column["verdicts"],
                    "entries": sorted(entries, key=lambda e: -e["rating"])})
    return JsonResponse({"categories": out, "provisional_floor": table["floor"], "classifying": table["pending"]})


@methods("POST")
@token_required
def similar_prompts(request):
    """POST /api/v1/leaderboard/similar {"prompt": ...}: the ranking on the verdicts whose prompts
    are most like it, how many it used, and the similarity used."""
    try:
        body = json_body(request, ["prompt"])
    except ValueError as exc:
        return error(400, str(exc))
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip() or len(prompt) > MAX_LIKE_CHARS:
        return error(400, f"`prompt` is a non-empty string of at most {MAX_LIKE_CHARS} characters.",
                     {"prompt": "required"})
    try:
        f = _filters(request)
    except FilterRefused as exc:
        return exc.response
    res = by_category.like(f, prompt, records.names())
    return JsonResponse({
        "similarity": res["method"], "verdicts": res["verdicts"], "prompts": res["prompts"], "pool": res["pool"],
        "similarity_range": list(res["similarity"]) if res["similarity"] else None, "provisional_floor": res["floor"],
        "entries": [{"model": r["model"], "label": r["name"].label, "rating": r["row"].rating,
                     "interval": [r["row"].lower, r["row"].upper], "verdicts": r["row"].battles,
                     "win_rate": r["row"].win_rate, "win_rate_interval": list(r["rate_interval"]),
                     "rank_shown": r["rank_shown"]} for r in res["rows"]],
    })
