"""Which teams a user is in and works in, and the one way to join or switch (arena/teams/models.py)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q

from arena.access import NotFound
from arena.api.http import Refusal

from .models import Membership, Team


def _memberships(user):
    """`user`'s memberships, the one they work in first: the marked current one, else (one added in
    the admin has none yet) their first team by name, until they switch."""
    return Membership.objects.filter(user=user).select_related("team").order_by("-current", "team__name")


def current_team(user) -> Team | None:
    """The team `user` works in now: what they start goes into it (None: in no team, their work is theirs alone)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    membership = _memberships(user).first()
    return membership.team if membership else None


def teams_and_current(user) -> tuple[list[Team], Team | None]:
    """The teams `user` is in, by name, and the one they work in: one query (every page's header)."""
    teams = [m.team for m in _memberships(user)]
    return sorted(teams, key=lambda t: t.name), (teams[0] if teams else None)


MINE, TEAM = "mine", "team"
SCOPES = (MINE, TEAM)  # what a list of work (suites, suite runs; History's tabs) may hold


def list_scope(user, asked) -> tuple[str, Team | None]:
    """The scope a page's list shows when `asked` (its ?scope=) and the user's current team: TEAM
    only for a user in a team, anything else MINE."""
    team = current_team(user)
    return (TEAM if asked == TEAM and team is not None else MINE), team


NO_TEAM = "You are in no team: scope=team has no team's work (scope=mine is your own)."


class ScopeRefused(Refusal):
    """An API call's `?scope=` that cannot apply: not one it takes, or `team` from a user in no team.
    A script must hear that its filter was not applied (a page shows its fallback instead)."""

    def as_json(self) -> dict:
        return {"error": {"code": self.code, "message": str(self), "fields": {"scope": str(self)}}}


def api_scope(user, asked: str | None) -> str:
    """The scope a list API call asked for (`asked`, its ?scope=; none: MINE), the one rule of every
    such endpoint; ScopeRefused (400) for one not in SCOPES, or TEAM from a user in no team."""
    scope = asked or MINE
    if scope not in SCOPES:
        raise ScopeRefused(f"scope takes {' or '.join(SCOPES)} (or nothing: {MINE}), not {scope[:40]!r}.")
    if scope == TEAM and current_team(user) is None:
        raise ScopeRefused(NO_TEAM)
    return scope


def in_scope(user, scope: str) -> Q:
    """The objects a list of `scope` holds: MINE the user's own; TEAM every member's in the team the
    user works in now (nothing for a user in no team: their team's work is none)."""
    if scope == TEAM:
        team = current_team(user)
        return Q(team=team) if team is not None else Q(pk__in=[])
    return Q(owner=user)


def whose(obj) -> dict:
    """What the API and the exports say of whose an object is: its owner's username and its team's
    name (empty: made in no team). Select `owner` and `team` with a list of them."""
    return {"owner": obj.owner.get_username(), "team": obj.team.name if obj.team_id else ""}


@transaction.atomic
def add_member(team: Team, user) -> Membership:
    """`user` joins `team` (again: nothing changes); it becomes their current team if they had none."""
    membership, _ = Membership.objects.get_or_create(team=team, user=user)
    if not Membership.objects.filter(user=user, current=True).exists():
        Membership.objects.filter(id=membership.id).update(current=True)
        membership.current = True
    return membership


@transaction.atomic
def switch(user, team_id) -> Team:
    """Work in `team_id` from now on; NotFound for a team `user` is not in (or no team at all)."""
    try:
        membership = Membership.objects.select_for_update().filter(user=user, team_id=int(team_id)).first()
    except (TypeError, ValueError):
        membership = None
    if membership is None:
        raise NotFound("No such team.")
    Membership.objects.filter(user=user, current=True).exclude(id=membership.id).update(current=False)
    Membership.objects.filter(id=membership.id).update(current=True)
    return membership.team


class _Current:
    """Where a new object goes when the caller names no team: its owner's current team."""

    def __repr__(self) -> str:
        return "CURRENT"


CURRENT = _Current()


def resolve(owner, team: Team | _Current | None) -> Team | None:
    """`team` itself, or `owner`'s current team for CURRENT (a run's later parts pass the run's own)."""
    return current_team(owner) if isinstance(team, _Current) else team
