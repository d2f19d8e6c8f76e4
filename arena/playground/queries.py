"""A user's own playground generations: what the playground's recent list and history's
Generations tab both show (history narrows it by its filters: arena/history/queries.py).

Not a battle's side (a comparison's, a tournament match's, or a judged pair's: a lone
generation a judge later compared is one), not a suite run's answer or judgement; generations
come through `Generation.objects.visible()`."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from arena.generations.models import Generation


def generations(user, whose: Q | None = None) -> QuerySet[Generation]:
    """`user`'s playground generations (web and API), newest first; `whose`: others' instead (History's
    "my team's": the team's, arena/history/queries.py)."""
    qs = Generation.objects.visible().filter(whose if whose is not None else Q(owner=user),
                                             battles_as_left__isnull=True, battles_as_right__isnull=True)
    return qs.exclude(origin=Generation.Origin.SUITE).select_related("model").order_by("-created_at")
