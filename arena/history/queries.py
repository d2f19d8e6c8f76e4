"""What a user's history lists and exports hold: their own objects ("mine"), or every member's
of the team they work in ("my team's", arena/teams/), newest first, narrowed by a search of
the prompt text.

Blindness: generations come through `Generation.objects.visible()`, and the battles an
export or a list names models for are those whose names may be shown; unrevealed blind
battles appear only under neutral labels (tournaments) or not at all (exports). A search
never looks at model names, so it cannot tell which blind battle a model played in."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from django import forms
from django.db.models import Count, Q, QuerySet

from arena.battles.models import Battle
from arena.generations import tags
from arena.generations.models import Generation
from arena.playground import queries as playground_queries
from arena.suite_runs.models import SuiteRun
from arena.teams.membership import MINE, TEAM, list_scope
from arena.teams.models import Team
from arena.tournaments.models import Tournament

MAX_TERMS = 10


@dataclass(frozen=True)
class Filters:
    """The user's narrowing of a list or an export: `q`, words that must all appear
    (case-insensitive) in the prompt or a system prompt ("a phrase" in quotes stays whole);
    `tag`, the prompt tag (normalised as the forms store it); `team`, whose work (below)."""

    q: str = ""
    tag: str = ""
    team: Team | None = None  # `scope=team`: the user's current team's work (every member's); None: their own

    @classmethod
    def from_query(cls, params, user=None) -> Filters:
        """`scope=team` counts only for a user in a team (the switch's link): anything else is "mine"."""
        # NUL characters dropped: no stored text holds one, and PostgreSQL refuses a query with one (a 500).
        raw_tag = (params.get("tag") or "").replace("\x00", "")[:2 * tags.MAX_LENGTH]
        try:
            tag = tags.normalise(raw_tag)
        except forms.ValidationError:  # no object can have it: it matches nothing
            tag = raw_tag.strip().lower()
        scope, team = list_scope(user, params.get("scope"))
        team = team if scope == TEAM else None
        return cls(q=(params.get("q") or "").replace("\x00", "").strip()[:200], tag=tag, team=team)

    @property
    def scope(self) -> str:
        return TEAM if self.team is not None else MINE

    def whose(self, user) -> Q:
        """Whose objects every query here holds: the team's (the user's current team, so all of them are
        visible to the user: arena/access.py), or the user's own."""
        return Q(team=self.team) if self.team is not None else Q(owner=user)

    def terms(self) -> list[str]:
        try:
            words = shlex.split(self.q)
        except ValueError:  # an unbalanced quote: plain words
            words = self.q.split()
        return [w for w in words if w.strip()][:MAX_TERMS]

    def as_query(self) -> dict:
        """The non-empty filters (and scope=team), for links that keep them (pages, exports)."""
        scope = TEAM if self.team is not None else ""
        return {k: v for k, v in (("q", self.q), ("tag", self.tag), ("scope", scope)) if v}

    def apply(self, qs: QuerySet, fields: list[str], tag_field: str = "tag") -> QuerySet:
        if self.tag:
            qs = qs.filter(**{tag_field: self.tag})
        for term in self.terms():
            match = Q()
            for field in fields:
                match |= Q(**{f"{field}__icontains": term})
            qs = qs.filter(match)
        return qs


GENERATION_TEXT = ["prompt", "system_prompt"]
BATTLE_TEXT = ["left__prompt", "left__system_prompt", "right__system_prompt"]
TOURNAMENT_TEXT = ["prompt", "system_prompt"]
SUITE_RUN_TEXT = ["suite__name"]  # a suite's name says what its prompts are about
BATTLE_RELATED = ("left__model", "right__model", "owner", "team")


def generations(user, filters: Filters = Filters()) -> QuerySet:
    """Playground generations (web and API: arena/playground/queries.py); a battle's answers are
    reached through it, a suite run's answers and judgements through the run."""
    qs = playground_queries.generations(user, filters.whose(user))
    return filters.apply(qs.select_related("owner", "team"), GENERATION_TEXT)


def comparisons(user, filters: Filters = Filters()) -> QuerySet:
    qs = Battle.objects.filter(filters.whose(user), mode=Battle.Mode.COMPARISON).select_related(*BATTLE_RELATED)
    return filters.apply(qs, BATTLE_TEXT).order_by("-created_at")


def anonymous_battles(user, filters: Filters = Filters()) -> QuerySet:
    """The user's anonymous battles, unvoted ones included (listed as "Model A vs Model B" until
    the vote: their names stay hidden, so one left for a new battle can be found and judged)."""
    qs = Battle.objects.filter(filters.whose(user), mode=Battle.Mode.ANONYMOUS).select_related(*BATTLE_RELATED)
    return filters.apply(qs, BATTLE_TEXT).order_by("-created_at")


def battles(user, filters: Filters = Filters(), mode: str | None = None) -> QuerySet:
    """Every battle whose models may be named (comparisons, anonymous battles once voted,
    tournament matches once revealed, suite-run pairs): what an export holds. Unrevealed blind
    battles are left out."""
    qs = Battle.objects.filter(filters.whose(user)).exclude(blind=True, revealed=False)
    if mode:
        qs = qs.filter(mode=mode)
    qs = qs.select_related(*BATTLE_RELATED, "judge", "rater_verdict")
    return filters.apply(qs, BATTLE_TEXT).order_by("-created_at")


def tournaments(user, filters: Filters = Filters()) -> QuerySet:
    qs = Tournament.objects.filter(filters.whose(user)).select_related("winner", "owner", "team")
    return filters.apply(qs, TOURNAMENT_TEXT).order_by("-created_at")


def suite_runs(user, filters: Filters = Filters()) -> QuerySet:
    qs = (SuiteRun.objects.filter(filters.whose(user)).select_related("suite", "judge", "owner", "team")
          .annotate(other_judges=Count("jury", distinct=True)))  # a jury's seats beside its first judge
    return filters.apply(qs, SUITE_RUN_TEXT, tag_field="suite__tag").order_by("-created_at")


def tags_used(user, filters: Filters = Filters()) -> list[str]:
    """Every tag given in the scope (generations, battles, tournaments): the filter's choices."""
    found = set(Generation.objects.tags_given(user, filters.whose(user) if filters.team is not None else None))
    found.update(Tournament.objects.filter(filters.whose(user)).exclude(tag="").order_by()
                 .values_list("tag", flat=True).distinct()[:200])
    return sorted(found)


def counts(user, filters: Filters) -> dict[str, int]:
    """How many of each the filters match: the tabs' numbers."""
    return {"generations": generations(user, filters).count(), "comparisons": comparisons(user, filters).count(),
            "anonymous": anonymous_battles(user, filters).count(),
            "tournaments": tournaments(user, filters).count(), "suite_runs": suite_runs(user, filters).count()}
