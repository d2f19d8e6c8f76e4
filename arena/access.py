"""Who may see and act on what: one access function per kind of object, and the one answer for
"not there" and "not yours" alike (`NotFound`: pages 404, the JSON API a 404 with code
`not_found`, sockets close 4404), so nobody learns that someone else's object exists.

Each kind's rule lives beside its model (import-linter's layers keep each app below the apps
that use it), and that function is the one place to change who may see it:

- a generation: arena/generations/access.py `access_generation`
- a battle:     arena/battles/access.py `access_battle`
- a tournament: arena/tournaments/access.py `access_tournament`
- a suite:      arena/suites/access.py `access_suite`
- a suite run:  arena/suite_runs/access.py `access_run`

Each takes `change`: True (the default) for what changes the object (a vote, a cancel, a
delete), False to open it. Members of the object's team open it read-only (`visible_to`,
`may_change`); a blind item stays blind to them too, as to its owner, until it is revealed.

Pages, the JSON API, sockets, share links and exports all look objects up through them."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q
from django.http import Http404

from arena.api.http import Refusal


class NotFound(Refusal, Http404):
    """No such object for this user. An Http404 to Django's pages, a Refusal to the JSON API."""

    status = 404
    code = "not_found"


class ReadOnly(Refusal, PermissionDenied):
    """A teammate's object: its team's members see it, only its owner and staff change it."""

    status = 403
    code = "read_only"


def visible_to(user) -> Q:
    """The objects `user` may open: their own, and those of the teams they are in (arena/teams/)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return Q(pk__in=[])
    return Q(owner=user) | Q(team__in=user.team_memberships.values("team_id"))


def may_change(user, obj) -> bool:
    """Its owner, or staff who can see it (a teammate sees it read-only)."""
    return obj.owner_id == user.pk or bool(user.is_staff)


def reachable(queryset, user, object_id, what: str, *, change: bool):
    """The object of `queryset` with this id that `user` may open; with `change`, that they may also
    change. NotFound("No such <what>.") for one they may not see, an id that is not one included;
    ReadOnly for a teammate's object they asked to change."""
    try:
        found = queryset.filter(visible_to(user), id=object_id).first()
    except (ValidationError, ValueError):  # not a UUID: nothing can have it
        found = None
    if found is None:
        raise NotFound(f"No such {what}.")
    if change and not may_change(user, found):
        raise ReadOnly(f"This {what} is {found.owner}'s: you see it as a member of its team, "
                       "and only its owner and staff change it.")
    return found


def owned(queryset, user, object_id, what: str):
    """For kinds without a team (a prompt's category): the object with this id owned by `user`,
    NotFound("No such <what>.") for anything else."""
    try:
        found = queryset.filter(id=object_id, owner=user).first()
    except (ValidationError, ValueError):
        found = None
    if found is None:
        raise NotFound(f"No such {what}.")
    return found
