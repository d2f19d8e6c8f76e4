"""The leaderboard's JSON API: the same board as the page (arena.leaderboard.board), for the same
filters given as query parameters; with none, every verdict the caller may see. Nothing is
remembered between calls: a call's filters are its own."""

from __future__ import annotations

from django.http import JsonResponse

from arena.accounts.bearer import token_required
from arena.api.http import error, methods

from . import board, cache
from .records import tags

BAD_FILTER = "A filter has a value it does not take; `fields` says which."


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
                    "style": f.style, "unreliable": f.unreliable},
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
    if wrong := board.refused(request.GET):
        return error(400, BAD_FILTER, wrong)
    f = board.parse(request.GET, cache.cached("tags", (), tags))
    return JsonResponse(board_json(board.board(request.user, f)))
