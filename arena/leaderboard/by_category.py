"""The leaderboard by kind of prompt: each contestant's rating and win rate in each category
(arena.categories), and the ranking fitted on the verdicts whose prompts are most like a pasted
one. Both fit the leaderboard's own Bradley–Terry model (ratings.leaderboard: the 95% interval
from its Laplace posterior) on a subset of the filter's verdicts, and give each win rate its 95%
Wilson interval (uncertainty.wilson); an entry with fewer verdicts than the provisional floor
says "not enough verdicts" instead of a rank.

A battle's category is its own assignment's; a battle without one (a suite run's pair: the run
creates it, not battles.actions) takes the category of a suite prompt with the same text. The
columns are every team's categories and the viewer's team's own (another team's own categories,
names included, are its business): a verdict placed in one of those counts in no column."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from arena.categories import actions as categories
from arena.categories.models import Assignment, Category, digest

from . import cache, ratings, records, similar, uncertainty
from .charts import Name

NONE_KEY = ""  # the column of verdicts whose prompt has no category
MAX_SIMILAR_POOL = 5_000  # "prompts like this one" compares the newest 5,000 verdicts' prompts
SIMILAR_COUNT = 30  # ...and fits the 30 nearest (each at least MIN_SIMILARITY)
MIN_SIMILARITY = 10.0  # chrF below this shares hardly a word


@dataclass(frozen=True)
class Cell:
    rating: float
    lower: float
    upper: float
    verdicts: int
    wins: float
    win_rate: float
    rate_lower: float  # the win rate's 95% Wilson interval
    rate_upper: float
    enough: bool  # at least the provisional floor of verdicts

    def as_json(self) -> dict:
        return {"rating": self.rating, "interval": [self.lower, self.upper], "verdicts": self.verdicts,
                "wins": self.wins, "win_rate": self.win_rate, "win_rate_interval": [self.rate_lower, self.rate_upper],
                "enough_verdicts": self.enough}


def _cells(triples: list[tuple[str, str, float]], floor: int) -> dict[str, Cell]:
    out = {}
    for r in ratings.leaderboard(triples):
        lo, hi = uncertainty.wilson(r.win_rate, r.battles) if r.battles else (0.0, 1.0)
        out[r.model] = Cell(r.rating, r.lower, r.upper, r.battles, r.wins, r.win_rate, lo, hi,
                            not uncertainty.provisional(r.battles, floor))
    return out


def battle_categories(battle_ids: list[str], prompts: dict[str, str]) -> dict[str, int]:
    """Battle id -> its category's id (battles with none left out)."""
    own = dict(Assignment.objects.filter(subject_kind=Assignment.Subject.BATTLE, subject_id__in=battle_ids,
                                         category__isnull=False).values_list("subject_id", "category_id"))
    rest = {bid: digest(prompts[bid]) for bid in battle_ids if bid not in own}
    if rest:
        by_digest = dict(Assignment.objects.filter(subject_kind=Assignment.Subject.SUITE_PROMPT,
                                                   digest__in=set(rest.values()), category__isnull=False)
                         .order_by("created_at").values_list("digest", "category_id"))
        own.update({bid: by_digest[d] for bid, d in rest.items() if d in by_digest})
    return own


def battle_category_names(battle_ids: list[str], prompts: dict[str, str]) -> dict[str, str]:
    """Battle id -> its category's name (what an export row says; battles with none left out)."""
    placed = battle_categories(battle_ids, prompts)
    names = dict(Category.objects.filter(id__in=set(placed.values())).values_list("id", "name"))
    return {bid: names[cid] for bid, cid in placed.items()}


def table(f, labels: dict[str, Name], team=None) -> dict:
    """Contestant by category over the filter `f`'s verdicts: a Cell per contestant and category
    (every team's and `team`'s: the viewer's; None where it has no verdict there), the categories'
    verdict counts, and the rows in order of the whole board's names."""
    categories.settle()
    cats = list(Category.objects.for_team(team).values_list("id", "name", "description"))
    floor = settings.ARENA_LEADERBOARD_PROVISIONAL_VERDICTS
    if not cats:  # nothing to split by: no fit (the whole board is the table above)
        return {"columns": [], "floor": floor, "verdicts": 0, "rows": [], "pending": 0}
    rows = records.prompt_records(f.mode, f.days, f.tag, f.flagged, f.kinds, f.unreliable, whose=f.whose)
    placed = battle_categories([r[0] for r in rows], {r[0]: r[4] for r in rows})
    groups: dict[int | str, list[tuple[str, str, float]]] = {cid: [] for cid, _n, _d in cats}
    groups[NONE_KEY] = []
    for bid, left, right, score, _prompt in rows:
        groups.setdefault(placed.get(bid, NONE_KEY), []).append((left, right, score))
    fitted = {cid: _cells(triples, floor) for cid, triples in groups.items() if triples}
    models = sorted({m for cells in fitted.values() for m in cells}, key=lambda m: (labels[m].label if m in labels
                                                                                   else m))
    columns = [{"name": name, "description": description, "verdicts": len(groups[cid])}
               for cid, name, description in cats]
    columns.append({"name": NONE_KEY, "description": "verdicts whose prompt no rule, classifier or owner placed",
                    "verdicts": len(groups[NONE_KEY])})
    return {
        "columns": columns, "floor": floor, "verdicts": len(rows),
        "rows": [{"model": m, "name": labels.get(m) or Name(m, m),
                  "cells": [fitted.get(cid, {}).get(m) for cid in [*(c for c, _n, _d in cats), NONE_KEY]]}
                 for m in models],
        "pending": Assignment.objects.filter(source=Assignment.Source.PENDING).count(),
    }


def cached_table(f, labels: dict[str, Name], team) -> dict:
    """`table`, cached until a verdict or a category changes, per filter and per team (whose own
    categories are columns)."""
    return cache.cached("by-category", (*f.key(), team.pk if team else None), lambda: table(f, labels, team))


def like(f, prompt: str, labels: dict[str, Name], count: int = SIMILAR_COUNT) -> dict:
    """The ranking fitted on the `count` verdicts (of the filter `f`) whose prompts are most like
    `prompt`: rows best first, how many verdicts and distinct prompts it used, their similarity."""
    rows = records.prompt_records(f.mode, f.days, f.tag, f.flagged, f.kinds, f.unreliable, limit=MAX_SIMILAR_POOL,
                                  whose=f.whose)
    scored = similar.scores(prompt, {r[0]: r[4] for r in rows})
    chosen = set(similar.nearest(scored, count, MIN_SIMILARITY))
    used = [r for r in rows if r[0] in chosen]
    floor = settings.ARENA_LEADERBOARD_PROVISIONAL_VERDICTS
    fitted = ratings.leaderboard([(left, right, score) for _b, left, right, score, _p in used])
    out = []
    for r in fitted:
        lo, hi = uncertainty.wilson(r.win_rate, r.battles) if r.battles else (0.0, 1.0)
        out.append({"model": r.model, "name": labels.get(r.model) or Name(r.model, r.model), "row": r,
                    "rate_interval": (lo, hi), "enough": not uncertainty.provisional(r.battles, floor),
                    "rank_shown": uncertainty.rank_shown(r.rank, r.battles, floor)})
    sims = [scored[r[0]] for r in used]
    return {"method": similar.METHOD, "verdicts": len(used), "pool": len(rows),
            "prompts": len({r[4] for r in used}), "similarity": (min(sims), max(sims)) if sims else None,
            "floor": floor, "min_similarity": MIN_SIMILARITY, "count": count, "rows": out}
