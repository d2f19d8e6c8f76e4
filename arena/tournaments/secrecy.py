"""Which models a viewer must not see named while their own blind verdicts are pending.

A blind match is worth something only if its judge cannot tell which model answered. The
tournament pages, frames and API name nobody before the reveal, but the staff pages that
show what the orchestrator runs (the status page and its socket, GET /api/v1/workers, the
worker admin, /healthz's details) would: which pair of workers starts, which one finishes
first. So those pages ask `secret_slugs(viewer)` and show the workers of those models only
as one anonymous aggregate. The rule lives here, once; the pages only apply it.

The rule, for a viewer (a user; anonymous viewers get no worker details at all elsewhere):

* every contestant of each tournament the viewer owns that is not revealed (running or
  stopped) and not long dead: created, or with a match (re-)run, within `SECRET_FOR`;
* both models of each blind, unrevealed battle the viewer owns that has not finished
  (a side still queued, loading or running) and was created within `SECRET_FOR`;
* the draft entries of those models (a speculative contestant loads its draft, and an AWQ
  draft being prepared would announce it).

`SECRET_FOR` bounds a tournament abandoned without finishing: a day after its last match
started its owner sees every worker again (a tournament is judged in one sitting; resuming
or re-running a match starts a battle, which makes it secret again). Other users, staff
included, see everything: the tournament is not theirs to judge. Hiding too much is safe,
so a model is hidden wherever it runs, for this viewer, even for someone else's request.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from arena.battles.models import Battle
from arena.catalogue.models import ModelEntry
from arena.generations.models import Generation

from .models import Entrant, Tournament

SECRET_FOR = timedelta(hours=24)
HIDDEN_LABEL = "Blind tournament contestants: hidden until the reveal"
REDACTED = "[a hidden contestant]"


def secret_models(user, *, now: datetime | None = None):
    """The catalogue entries whose workers `user` must not see one by one (see the module)."""
    if user is None or not user.is_authenticated:
        return ModelEntry.objects.none()
    cutoff = (now or timezone.now()) - SECRET_FOR
    tournaments = Tournament.objects.filter(
        owner=user, state__in=[Tournament.State.RUNNING, Tournament.State.STOPPED],
    ).filter(Q(created_at__gte=cutoff) | Q(matches__runs__created_at__gte=cutoff))
    battles = Battle.objects.filter(owner=user, blind=True, revealed=False, created_at__gte=cutoff).exclude(
        left__status__in=Generation.FINISHED, right__status__in=Generation.FINISHED)
    contestants = ModelEntry.objects.filter(
        Q(id__in=Entrant.objects.filter(tournament__in=tournaments).values("model"))
        | Q(id__in=battles.values("left__model"))
        | Q(id__in=battles.values("right__model"))
    )
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
