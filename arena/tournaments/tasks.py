"""Warming a match's models before it plays: the first match's as the tournament is created, the next
match's while the user judges the current one. The models say when (their signals); this module
listens (connected when the app is ready), so the models never import the tasks."""

from __future__ import annotations

import logging

import redis
from celery import shared_task
from django.dispatch import receiver

from arena import streams
from arena.battles.models import Battle
from arena.generations.models import Generation
from orchestration import client as orch

from .actions import battle_started, warm_wanted
from .models import Match

log = logging.getLogger(__name__)
CHECK_EVERY_S = 2
MAX_CHECKS = 450  # 15 minutes: longer than any load the orchestrator waits for


@shared_task(ignore_result=True, soft_time_limit=30, time_limit=60)
def prewarm_next(tournament_id: str, match_id: int, battle_id: str, checks: int = 0) -> None:
    """Once the current battle's models are loaded (its sides are past loading, so the
    pre-warm cannot take the memory they need), ask the orchestrator to pre-warm the
    known contestants of the following match. A pre-warm only uses free memory and never
    evicts, so it cannot slow a match that runs. Re-enqueues itself rather than holding a
    Celery slot while it waits."""
    battle = Battle.objects.select_related("left", "right").filter(id=battle_id).first()
    if battle is None:
        return
    loading = (Generation.Status.QUEUED, Generation.Status.LOADING)
    if battle.left.status in loading or battle.right.status in loading:
        if checks < MAX_CHECKS:
            prewarm_next.apply_async((tournament_id, match_id, battle_id, checks + 1), countdown=CHECK_EVERY_S)
        return
    match = Match.objects.select_related("left", "right", "tournament").filter(
        id=match_id, tournament_id=tournament_id).first()
    if match is None or match.decided or match.tournament.state != "running":
        return
    prewarm(match)


@receiver(warm_wanted, sender=Match)
def warm_now(sender, match: Match, **kwargs) -> None:
    prewarm(match)


@receiver(battle_started, sender=Match)
def warm_the_following_match(sender, match: Match, battle: Battle, **kwargs) -> None:
    following = match.tournament.following_match(match)
    if following is not None:
        prewarm_next.delay_on_commit(str(match.tournament_id), following.id, str(battle.id))


def prewarm(match: Match) -> None:
    """Ask the orchestrator to warm `match`'s known contestants: a prewarm lease, which only starts what
    fits in free memory, never evicts, and ends once they are ready (orchestration/policy.py)."""
    models = [m for m in (match.left, match.right) if m is not None]
    if not models:
        return
    try:
        orch.request_lease(streams.client(), streams.keys(), f"prewarm:{match.tournament_id}:{match.id}",
                           [m.spec() for m in models], prewarm=True)
    except redis.RedisError:  # only a head start: the match's own lease loads them anyway
        log.warning("Tournament %s: could not ask to pre-warm match %s", match.tournament_id, match.number)
        return
    log.info("Tournament %s: pre-warming %d model(s) for match %s", match.tournament_id, len(models), match.number)
