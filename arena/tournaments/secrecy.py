"""Tournaments' part of the blind secrecy rule (arena/battles/secrecy.py, which says why).

Every contestant of each tournament the viewer owns that is not revealed (running or stopped)
and not long dead: created, or with a match (re-)run, within the rule's cutoff. A tournament is
judged in one sitting; resuming or re-running a match starts a battle, which makes it secret
again. Registered with battles' rule from TournamentsConfig.ready().
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q, QuerySet

from .models import Entrant, Tournament


def secret_contestants(user, cutoff: datetime) -> QuerySet:
    """The ids (ModelEntry) of `user`'s unrevealed tournaments' contestants, as a subquery."""
    tournaments = Tournament.objects.filter(
        owner=user, state__in=[Tournament.State.RUNNING, Tournament.State.STOPPED],
    ).filter(Q(created_at__gte=cutoff) | Q(matches__runs__created_at__gte=cutoff))
    return Entrant.objects.filter(tournament__in=tournaments).values("model")
