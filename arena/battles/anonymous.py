"""Anonymous battles: the user writes a prompt, the app draws the pair, both sides stay blind
until the user votes, then the names, the speeds and the reason for the pick show.

The pick rule itself is pure (arena/battles/draw.py); this module gathers what it reads:
the enabled catalogue entries less staff's `ArenaExclusion`s, each entry's memory estimate
(what its worker reserves: an endpoint's costs nothing), what is warm and the largest node
budget from the orchestrator's status snapshot in Redis (when there is none, the budget this
machine would give its workers), and people's counted verdicts per pair.

A battle is blind and paced exactly as a tournament match (`Battle.blind`, arena/battles/pacing.py
through the battle's socket and page), with a seed drawn from the OS per side and sampling no
narrower than a tournament accepts, so an answer cannot be replayed in the playground and
matched. Its vote reveals it (`actions.vote`); until then the secrecy rule hides its models
from the owner's staff pages (`secret_contestants`, registered from BattlesConfig.ready()).
"""

from __future__ import annotations

import json
import logging
import random
from datetime import datetime

import redis
from django.conf import settings
from django.db.models import Count, F, Q, QuerySet

from arena import streams
from arena.catalogue.models import ModelEntry

from . import draw, fair, presenting
from .models import ArenaExclusion, Battle

log = logging.getLogger(__name__)

# The least randomness a blind side samples with (as a tournament match: an answer near greedy
# could be replayed in the playground, word for word, to tell the contestants apart).
MIN_TEMPERATURE = 0.3
MIN_TOP_P = 0.5
WARM_STATES = frozenset({"ready"})
SCORES = {Battle.Outcome.LEFT: 1.0, Battle.Outcome.RIGHT: 0.0, Battle.Outcome.TIE: 0.5, Battle.Outcome.BOTH_BAD: 0.5}


class NoPair(Exception):
    """No two entries may meet: fewer than two allowed, or no two fit in memory together."""

    message = ("No two catalogue models can meet in an anonymous battle now: fewer than two are enabled and "
               "not excluded from the draw, or no two fit in memory together.")


def excluded_slugs() -> set[str]:
    return set(ArenaExclusion.objects.values_list("model__slug", flat=True))


def orchestrator_view() -> tuple[float | None, set[str]]:
    """(the largest live node's memory budget, the slugs with a ready worker) from the
    orchestrator's snapshot; without one (no orchestrator yet, Redis away), this machine's
    budget as the local backend measures it and nothing warm."""
    try:
        raw = streams.client().get(streams.keys().orchestrator_status())
    except redis.RedisError:
        raw = None
    if raw:
        published = json.loads(raw)
        budgets = [n["budget_mb"] for n in published.get("nodes", [])
                   if n.get("alive", True) and n.get("budget_mb") is not None]
        warm = {w["slug"] for w in published.get("workers", []) if w.get("state") in WARM_STATES and w.get("slug")}
        if budgets:
            return max(budgets), warm
        return None, warm
    from orchestration.resources import node_budget_mb

    try:
        return node_budget_mb(), set()
    except ValueError:  # a malformed ARENA_NODE_MEMORY_MB: the orchestrator refuses it too
        return None, set()


def pool() -> QuerySet:
    """The catalogue entries the draw may take: enabled, not excluded, and no base model staff
    left out of chat draws."""
    return (ModelEntry.objects.enabled().exclude(id__in=ArenaExclusion.objects.values("model"))
            .exclude(base=True, in_chat_draws=False))


def in_draw() -> int:
    """How many catalogue entries the draw may take (a count names nobody)."""
    return pool().count()


def candidates(warm: set[str]) -> list[draw.Candidate]:
    """Every enabled entry; a base model staff did not let into chat draws is marked, and the
    rule leaves it out (an anonymous battle's prompt is a chat)."""
    return [draw.Candidate(m.slug, 0.0 if m.is_endpoint else float(m.memory_estimate_mb or 0), m.slug in warm,
                           chat=m.takes_chat)
            for m in ModelEntry.objects.enabled().order_by("slug")]


def verdict_records() -> dict[draw.Pair, draw.Record]:
    """People's counted verdicts (every mode; a blind one once revealed) summed per pair."""
    rows = (Battle.objects.exclude(outcome="").filter(judge__isnull=True).exclude(blind=True, revealed=False)
            .exclude(left__model_id=F("right__model_id"))
            .values("left__model__slug", "right__model__slug", "outcome").annotate(n=Count("id")).order_by())
    expanded = []
    for row in rows:
        score = SCORES[row["outcome"]]
        expanded += [(row["left__model__slug"], row["right__model__slug"], score)] * row["n"]
    return draw.tally(expanded)


def pick(rng: random.Random | None = None) -> draw.Pick:
    """The next pair by the rule (arena/battles/draw.py); raises NoPair."""
    budget, warm = orchestrator_view()
    chosen = draw.draw(candidates(warm), verdict_records(), rng or random.SystemRandom(),
                       random_share=settings.ARENA_ANONYMOUS_RANDOM_SHARE, excluded=excluded_slugs(),
                       budget_mb=budget)
    if chosen is None:
        raise NoPair(NoPair.message)
    return chosen


def blind_params(model: ModelEntry, overrides: dict) -> dict:
    """The entry's defaults under the battle's shared values (its one token limit, its stop rules:
    arena/battles/fair.py, never the entry's own), no narrower than a blind side may sample, and a
    seed of its own from the OS."""
    params = model.params_with_defaults(fair.with_limit(overrides), shared=True).to_dict()
    params["temperature"] = max(params.get("temperature") or 0.0, MIN_TEMPERATURE)
    params["top_p"] = max(params.get("top_p") or 0.0, MIN_TOP_P)
    params["seed"] = random.SystemRandom().randrange(2**32)
    return params


def can_continue(battle: Battle) -> bool:
    """Not judged yet, and both answers in (a follow-up copies both answers' text)."""
    return not battle.outcome and not battle.revealed and battle.answers_stored and presenting.shown(battle).votable


def secret_contestants(user, cutoff: datetime) -> QuerySet:
    """The secrecy rule's part for anonymous battles (arena/battles/secrecy.py): both models of
    each of `user`'s anonymous battles not judged yet, even once both answers have ended (the
    owner still has to vote), within the rule's cutoff."""
    battles = Battle.objects.filter(owner=user, mode=Battle.Mode.ANONYMOUS, revealed=False, created_at__gte=cutoff)
    return ModelEntry.objects.filter(Q(id__in=battles.values("left__model")) | Q(id__in=battles.values("right__model"))
                                     ).values("id")


REASON_WORDS = {"random": "The app drew this pair at random.",
                "least_settled": "The app chose this pair: their order was the least settled by the verdicts so far."}


def vote_problem(battle: Battle) -> str:
    """Why this anonymous battle takes no vote now ("" if it does): judged already (the names
    show, so a change would not be blind), or continued (the latest turn is judged)."""
    if battle.revealed or battle.outcome:
        return "This battle is judged: the names are shown, so its verdict stays as given."
    if battle.children.filter(mode=Battle.Mode.ANONYMOUS).exists():
        return "This conversation went on: judge its latest turn."
    return ""
