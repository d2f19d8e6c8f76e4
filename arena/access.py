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

Pages, the JSON API, sockets, share links and exports all look objects up through them."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404

from arena.api.http import Refusal


class NotFound(Refusal, Http404):
    """No such object for this user. An Http404 to Django's pages, a Refusal to the JSON API."""

    status = 404
    code = "not_found"


def owned(queryset, user, object_id, what: str):
    """The object of `queryset` with this id owned by `user`; NotFound("No such <what>.") for
    anything else, an id that is not one included."""
    try:
        found = queryset.filter(id=object_id, owner=user).first()
    except (ValidationError, ValueError):  # not a UUID: nothing can have it
        found = None
    if found is None:
        raise NotFound(f"No such {what}.")
    return found
