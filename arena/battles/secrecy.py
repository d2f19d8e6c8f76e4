"""Which models a viewer must not see named while their own blind verdicts are pending.

A blind battle is worth something only if its judge cannot tell which model answered. The
battle and tournament pages, frames and API name nobody before the reveal, but the staff pages
that show what the orchestrator runs (the status page and its socket, GET /api/v1/workers, the
worker admin, /healthz's details, the catalogue's preparation column and notices) would: which
pair of workers starts, which one finishes first. So those pages ask `secret_slugs(viewer)` (or
`secret_models`) and show the workers of those models only as one anonymous aggregate. The rule
lives here, once; the pages only apply it.

The rule, for a viewer (a user; anonymous viewers get no worker details at all elsewhere):

* both models of each blind, unrevealed battle the viewer owns that has not finished
  (a side still queued, loading or running) and was created within `SECRET_FOR`;
* the models each registered source names for the viewer: the apps above battles that run
  blind battles of their own say which of their contestants are still secret (tournaments:
  arena/tournaments/secrecy.py, registered from its AppConfig.ready(), so battles never
  imports them);
* the draft entries of those models (a speculative contestant loads its draft, and an AWQ
  draft being prepared would announce it).

`SECRET_FOR` bounds what was abandoned without finishing: a day later its owner sees every
worker again. Other users, staff included, see everything: the verdict is not theirs to give.
Hiding too much is safe, so a model is hidden wherever it runs, for this viewer, even for
someone else's request.

Catalogue sits below battles: it asks through its own hook (arena/catalogue/hiding.py), which
battles' AppConfig.ready() registers `secret_models` with.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta

from django.db.models import Q, QuerySet
from django.utils import timezone

from arena.catalogue.models import ModelEntry
from arena.generations.models import Generation

from .models import Battle

SECRET_FOR = timedelta(hours=24)
HIDDEN_LABEL = "Blind tournament contestants: hidden until the reveal"
REDACTED = "[a hidden contestant]"

# A source: (viewer, cutoff) -> a query of ModelEntry ids (e.g. `....values("model")`) still secret.
Source = Callable[[object, datetime], QuerySet]
_sources: list[Source] = []


def register(source: Source) -> None:
    """Adds `source` to the rule (once, however often it is registered)."""
    if source not in _sources:
        _sources.append(source)


def secret_models(user, *, now: datetime | None = None) -> QuerySet[ModelEntry]:
    """The catalogue entries whose workers `user` must not see one by one (see the module)."""
    if user is None or not user.is_authenticated:
        return ModelEntry.objects.none()
    return _secret_models(user, (now or timezone.now()) - SECRET_FOR)


def keeps_secrets(user_id) -> bool:
    """Whether the user with this id has any secret model now: the readiness rule (registered with
    arena/generations/readiness.py) withholds the load and queue figures of all their generations meanwhile."""
    return _secret_models(user_id, timezone.now() - SECRET_FOR).exists()


def _secret_models(user, cutoff: datetime) -> QuerySet[ModelEntry]:
    """`user` (a user or its id: the queries filter on it alike)."""
    battles = Battle.objects.filter(owner=user, blind=True, revealed=False, created_at__gte=cutoff).exclude(
        left__status__in=Generation.FINISHED, right__status__in=Generation.FINISHED)
    secret = Q(id__in=battles.values("left__model")) | Q(id__in=battles.values("right__model"))
    for source in _sources:
        secret |= Q(id__in=source(user, cutoff))
    contestants = ModelEntry.objects.filter(secret)
    return ModelEntry.objects.filter(Q(id__in=contestants.values("id")) | Q(id__in=contestants.values("draft")))


def secret_slugs(user, *, now: datetime | None = None) -> frozenset[str]:
    """The slugs of `secret_models(user)`: what worker records and snapshots are keyed by."""
    return frozenset(secret_models(user, now=now).values_list("slug", flat=True))


def redact(text: str, slugs: frozenset[str]) -> str:
    """`text` with each of `slugs` (alone, or in a worker id: slug-1a2b3c4d) replaced by
    REDACTED: a visible worker's record may name a secret one ("evicted to make room for
    SLUG"). A longer slug that merely starts with a secret one is left alone."""
    if not slugs or not text:
        return text
    names = "|".join(re.escape(slug) for slug in sorted(slugs, key=len, reverse=True))
    return re.sub(rf"(?<![\w-])(?:{names})(?:-[0-9a-f]{{8}})?(?![\w-])", REDACTED, text)
