"""What the leaderboard shows for one choice of filters: shared by its page and its JSON API.

The board opens on every verdict a viewer may see (every kind: people's in comparisons,
tournaments, anonymous battles and suite runs, and model judges' less those marked unreliable),
names and counts each kind, and can narrow to any of them. Everything computed from the verdicts
is the same for every viewer and is cached per filter until a verdict lands (cache.py); the
names, families, speeds and memory are read on each request.

Whose verdicts (`scope`): everyone's (the default), the viewer's own work's (`mine`), or their
current team's, every member's (`team`); each scope's results are cached apart (Filters.key).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import urlencode

from django.conf import settings

from arena.teams.membership import current_team

from . import cache, decision, measures, ratings, records, style, uncertainty
from .agreement import agreement
from .charts import Name
from .records import EVERY_KIND, EVERYONE, KINDS, MODES, PERIODS, SOURCE_KINDS, Whose

# The query parameters that choose what the board shows (a/b, the pair to separate, are not one).
FILTER_PARAMS = ("kind", "mode", "source", "days", "tag", "flagged", "style", "unreliable", "group", "scope")
ALL = "all"
SCOPES = {"all": "Everyone's verdicts", "mine": "My verdicts", "team": "My team's verdicts"}


@dataclass(frozen=True)
class Filters:
    kinds: frozenset[str] = EVERY_KIND
    mode: str = "all"  # the older "Verdicts" choice (named, blind, anonymous), still read from links
    period: str = "all"
    tag: str = ""
    flagged: bool = False  # include blind verdicts where an answer names a contestant
    style: bool = False  # style control
    unreliable: bool = False  # count the verdicts of judges marked unreliable
    grouped: bool = False  # variants under their base model's family row (display only)
    whose: Whose = EVERYONE  # whose work's verdicts: everyone's, the viewer's, their team's

    @property
    def days(self) -> int | None:
        return PERIODS[self.period]

    @property
    def every_kind(self) -> bool:
        return self.kinds == EVERY_KIND

    def key(self) -> tuple:
        """The cache key's parts: what changes the computed results (sorted: a set's order is not)."""
        # Which judges are marked unreliable follows from their readings: a new one bumps the
        # verdict generation like any verdict, so it needs no part of the key.
        return (",".join(sorted(self.kinds)), self.mode, self.period, self.tag, self.flagged, self.style,
                self.unreliable, self.whose.key())

    def params(self) -> list[tuple[str, str]]:
        """This filter as query parameters (defaults left out; kinds always named, so a form or
        link carrying them names a filter and wins over the one remembered)."""
        params = [("kind", k) for k in sorted(self.kinds)] if not self.every_kind else [("kind", ALL)]
        return params + [(name, value) for name, value, default in (
            ("mode", self.mode, "all"), ("days", self.period, "all"), ("tag", self.tag, ""),
            ("flagged", "include" if self.flagged else "", ""), ("style", "1" if self.style else "", ""),
            ("unreliable", "include" if self.unreliable else "", ""), ("group", "family" if self.grouped else "", ""),
            ("scope", self.whose.scope, ALL))
            if value != default]

    def query(self, **changes) -> str:
        """This filter (with `changes`) as a query string, for links that keep the rest of it."""
        return "?" + urlencode(replace(self, **changes).params())


# The values each filter takes (the tag aside: any tag may be asked for, an unknown one matches none).
CHOICES = {"kind": (*KINDS, ALL), "mode": tuple(MODES), "days": tuple(PERIODS), "flagged": ("include",),
           "unreliable": ("include",), "style": ("1",), "group": ("family",), "scope": tuple(SCOPES)}
UNKNOWN_VALUE = "Unknown value {value!r}: use one of {choices}."


def refused(query) -> dict[str, str]:
    """Each filter of the query given a value it does not take, with a sentence: the API refuses
    them (a caller's typo must not read as a board of every verdict); the page falls back instead."""
    wrong = {}
    for name, choices in CHOICES.items():
        bad = [v for v in query.getlist(name) if v not in choices]
        if bad:
            wrong[name] = UNKNOWN_VALUE.format(value=bad[0][:40], choices=", ".join(choices))
    return wrong


def parse(query, tag_choices: list[str]) -> Filters:
    """The filters a query asks for; anything unknown falls back to its default (every kind)."""
    asked = [k for k in query.getlist("kind") if k in KINDS]
    if ALL in query.getlist("kind") or (not asked and "kind" in query):
        kinds = EVERY_KIND
    elif asked:
        kinds = frozenset(asked)
    else:  # an older link's "whose verdicts"
        kinds = SOURCE_KINDS.get(query.get("source", ""), EVERY_KIND)
    return Filters(
        kinds=kinds, mode=query.get("mode") if query.get("mode") in MODES else "all",
        period=query.get("days") if query.get("days") in PERIODS else "all",
        tag=query.get("tag") if query.get("tag") in tag_choices else "",
        flagged=query.get("flagged") == "include", style=query.get("style") == "1",
        unreliable=query.get("unreliable") == "include", grouped=query.get("group") == "family")


def scoped(f: Filters, query, user) -> Filters | None:
    """`f` narrowed to whose verdicts the query asks for (`scope`): everyone's unless it names mine
    or team; None for `team` from a user in no team (the page falls back to everyone's, the API
    refuses it)."""
    scope = query.get("scope")
    if scope == "mine":
        return replace(f, whose=Whose("mine", user.pk))
    if scope == "team":
        team = current_team(user)
        return replace(f, whose=Whose("team", team.pk)) if team is not None else None
    return f


def results(f: Filters) -> dict:
    """The filter's computed results, cached until a verdict lands."""
    return cache.cached("board", f.key(), lambda: _results(f))


def _results(f: Filters) -> dict:
    """What the page shows of one filter's verdicts: ratings (with style control if asked), the
    win matrix, the agreement, the counts (also per kind, whichever kinds are shown)."""
    scope, whose = (f.mode, f.days, f.tag), f.whose
    verdicts = records.battle_records(*scope, f.flagged, f.kinds, f.unreliable, whose)
    triples = [(left, right, score) for left, right, score, _t in verdicts]
    return {
        "plain": ratings.leaderboard(triples),
        "fit": _style_fit(f) if f.style else None,
        "from_tournaments": _tournament_counts(verdicts),
        "flagged_count": records.flagged_count(*scope, f.kinds, f.unreliable, whose),
        "agreement": agreement(records.agreement_records(*scope, f.flagged, whose)),
        "battles": len(verdicts), "tournament_battles": sum(1 for *_x, t in verdicts if t),
        "cells": ratings.win_matrix(triples),
        "kinds": records.kind_counts(*scope, f.flagged, f.unreliable, whose),
        "unreliable_left_out": 0 if f.unreliable else records.unreliable_count(*scope, f.flagged, whose),
    }


def _style_fit(f: Filters) -> ratings.StyleFit:
    """The filter's verdicts fitted with style covariates (length, Markdown elements)."""
    rows = records.style_records(f.mode, f.days, f.tag, f.flagged, f.kinds, f.unreliable, f.whose)
    x = style.design_matrix([(style.answer_style(*left), style.answer_style(*right)) for *_x, left, right in rows])
    labels = [style.LABELS[name] for name in style.FEATURES]
    return ratings.style_leaderboard([(left, right, score) for left, right, score, *_a in rows], x, labels)


def _tournament_counts(rows) -> dict[str, int]:
    counts: dict[str, int] = {}
    for left, right, _score, tournament in rows:
        if tournament:
            for slug in (left, right):
                counts[slug] = counts.get(slug, 0) + 1
    return counts


def sources(f: Filters, counts: dict[str, int]) -> dict:
    """The source line: every kind with its count (in the filter's period, tag and mode, whichever
    kinds are shown), whether it is shown, and the links that show it alone or every kind."""
    kinds = [{"key": k, "label": KINDS[k], "count": counts[k], "shown": k in f.kinds,
              "only": f.query(kinds=frozenset({k}))} for k in KINDS]
    return {"total": sum(counts.values()), "kinds": kinds, "present": [k for k in kinds if k["count"]],
            "shown_words": decision.names([KINDS[k] for k in KINDS if k in f.kinds]) if f.kinds else "none",
            "every": f.query(kinds=EVERY_KIND), "every_kind": f.every_kind}


@dataclass(frozen=True)
class Board:
    filters: Filters
    results: dict
    table: list[dict]
    families: list[dict]
    summary: decision.Summary
    labels: dict[str, Name]
    points: list  # frontier.Point per rated entry: speed and memory


def board(user, f: Filters) -> Board:
    """The filter's table (each row with its family and provisional mark), its families, and its
    decision summary with the viewer's speeds and memory."""
    res = results(f)
    plain, fit = res["plain"], res["fit"]
    rows = fit.ratings if fit else plain
    labels, kin = records.names(), records.families()
    threshold = settings.ARENA_LEADERBOARD_PROVISIONAL_VERDICTS
    without = {r.model: r for r in plain}
    table = [{"row": r, "name": labels.get(r.model) or Name(r.model, r.model),
              "from_tournaments": res["from_tournaments"].get(r.model, 0), "plain": without[r.model],
              "provisional": uncertainty.provisional(r.battles, threshold), "provisional_floor": threshold,
              "rank_shown": uncertainty.rank_shown(r.rank, r.battles, threshold),  # "not enough verdicts" below it
              "family": kin.get(r.model) or records.Family(f"entry:{r.model}", r.model, records.FULL_VARIANT)}
             for r in rows]
    points = measures.points(user, {r.model: r.rating for r in rows}, labels)
    summary = decision.summarise([_entry(t, points) for t in table], res["cells"], decision.Context(
        verdicts=res["battles"], tournament_verdicts=res["tournament_battles"],
        unreliable_judges=_unreliable_counted(f, labels), provisional_threshold=threshold))
    return Board(f, res, table, _families(table), summary, labels, points)


def _entry(t: dict, points) -> decision.Entry:
    r = t["row"]
    point = next((p for p in points if p.slug == r.model), None)
    return decision.Entry(
        r.model, t["name"].label, r.rating, r.lower, r.upper, r.rank_best or r.rank, r.rank_worst or r.rank,
        r.battles, t["provisional"], point.tokens_per_s if point else None, bool(point and point.speed_mixed),
        point.memory_mb if point else None, bool(point and point.memory_measured))


def _unreliable_counted(f: Filters, labels: dict[str, Name]) -> tuple[str, ...]:
    """The labels of judges marked unreliable whose verdicts this view counts (asked for)."""
    if not (f.unreliable and "judge" in f.kinds):
        return ()
    return tuple(sorted((labels.get(slug) or Name(slug, slug)).label for slug in records.unreliable_judges()))


def _families(table: list[dict]) -> list[dict]:
    """The table's rows grouped by base model, families in the order of their best variant."""
    groups: dict[str, dict] = {}
    for t in table:
        fam = t["family"]
        groups.setdefault(fam.key, {"key": fam.key, "name": fam.name, "rows": []})["rows"].append(t)
    for group in groups.values():
        group["best"] = group["rows"][0]
    return list(groups.values())
