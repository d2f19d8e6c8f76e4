"""Every write that starts, changes or ends a battle: start (and re-run, swap, continue; an
anonymous battle's draw and its follow-ups), vote, stop, and the self-identification flag.
Pages, the API, sockets, tasks and tournaments call these alike; the model holds the data and
the queries."""

from __future__ import annotations

import random
import uuid

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from arena import conversations
from arena.catalogue.models import ModelEntry
from arena.categories import actions as categories
from arena.generations import services
from arena.generations.models import Generation
from arena.generations.services import GenerationRequest
from arena.teams import membership
from arena.teams.membership import CURRENT, _Current
from arena.teams.models import Team

from . import anonymous, presenting
from .identity import identity_mentions
from .models import Battle
from .voting import Note


@transaction.atomic
def start_battle(user, *, prompt: str, sides: dict[str, dict], mode: str = Battle.Mode.COMPARISON,
                 blind: bool = False, parent: Battle | None = None, origin: str = Generation.Origin.WEB,
                 tag: str = "", team: Team | _Current | None = CURRENT) -> Battle:
    """`sides`: {"left": {model, system_prompt, params, history}, "right": {...}}. It goes into
    `team` (a tournament's match: the tournament's), its parent's, else the user's current team.

    A web battle is cancelled when every viewer has left; an API one runs to the end.
    Raises limits.LimitExceeded when the user may not start it now (it costs one per side)."""
    battle_id = uuid.uuid4()  # the run the two sides belong to: they start together
    team = parent.team if parent is not None else membership.resolve(user, team)
    # No `reuse`: a blind side answering at once from the cache would tell its judge which it is
    # (arena/generations/cache.py), so battles never reuse a stored answer, blind or not.
    left, right = services.start(
        user, [GenerationRequest(model=s["model"], prompt=prompt, system_prompt=s.get("system_prompt") or "",
                                 params=s["params"], history=s.get("history") or (), tag=tag)
               for s in (sides["left"], sides["right"])],
        origin=origin, kind=Battle.RUN_KIND, run_id=battle_id, team=team)
    battle = Battle.objects.create(id=battle_id, owner=user, team=team, mode=mode, blind=blind, left=left, right=right,
                                   parent=parent, tag=tag)
    categories.assign(user, "battle", battle.id, prompt, [tag], team=team)  # by rule, else the classifier (queued)
    return battle


def start_comparison(user, cleaned: dict, origin: str = Generation.Origin.WEB, redo: Battle | None = None) -> Battle:
    """`redo`: a battle whose turn this one redoes with the form's prompt (its "Edit the prompt"):
    each side goes on from that side's own earlier turns. Raises conversations.ConversationTooLong
    (nothing created) when a side's conversation would be past a limit."""
    sides = {
        side: {"model": cleaned[f"{side}_model"], "system_prompt": cleaned.get(f"{side}_system_prompt"),
               "params": cleaned[f"{side}_params"], "history": list(gen.history) if gen is not None else []}
        for side, gen in (redo.sides if redo else (("left", None), ("right", None)))
    }
    if redo:
        for s in sides.values():
            conversations.check(prompt=cleaned["prompt"], history=s["history"], system_prompt=s["system_prompt"] or "")
    return start_battle(user, prompt=cleaned["prompt"], sides=sides, origin=origin, tag=cleaned.get("tag") or "",
                        parent=redo)


def _side_settings(gen: Generation, history: list | None = None) -> dict:
    return {"model": gen.model, "system_prompt": gen.system_prompt, "params": gen.params,
            "history": gen.history if history is None else history}


def rerun(battle: Battle, *, swap: bool = False) -> Battle:
    """The same battle again (a fresh sample), or with the sides swapped."""
    left, right = (battle.right, battle.left) if swap else (battle.left, battle.right)
    return start_battle(battle.owner, prompt=battle.prompt, mode=battle.mode, blind=battle.blind, parent=battle,
                        tag=battle.tag, sides={"left": _side_settings(left), "right": _side_settings(right)})


def follow_up(battle: Battle, prompt: str) -> Battle:
    """Another turn on both sides, each continuing its own conversation. Raises
    conversations.ConversationTooLong (nothing created) when either side's would be past a limit."""
    for _side, gen in battle.sides:
        conversations.check(prompt=prompt, history=gen.conversation(), system_prompt=gen.system_prompt)
    return start_battle(battle.owner, prompt=prompt, mode=battle.mode, blind=battle.blind, parent=battle,
                        tag=battle.tag,
                        sides={side: _side_settings(gen, gen.conversation()) for side, gen in battle.sides})


def stop_battle(battle: Battle) -> None:
    """Ask both of a battle's live generations to stop (as the Stop button does)."""
    for _side, gen in battle.sides:
        gen.refresh_from_db(fields=["status"])
    services.cancel([gen.id for _side, gen in battle.sides if not gen.finished], "user")


def vote(battle: Battle, outcome: str, note: Note | None = None) -> bool:
    """Record the verdict once both answers are in; a later vote replaces it (a change of mind),
    its note (reasons and comment, checked by voting.clean_note) too.
    A model judge's record takes no person's vote: that would mix the two silently.

    "In" is what the page shows (presenting.shown): a vote may come a few milliseconds after the
    streams' terminal events and before the rows are stored, and must not be refused."""
    if outcome not in Battle.Outcome.values or battle.judged:
        return False
    if battle.mode == Battle.Mode.ANONYMOUS and battle.revealed:  # named now: a change would not be blind
        return False
    if not presenting.shown(battle).votable:
        return False
    battle.outcome, battle.voted_at = outcome, timezone.now()
    note = note or Note()
    battle.comment, battle.reasons = note.comment, list(note.reasons)
    fields = ["outcome", "voted_at", "comment", "reasons"]
    if battle.mode == Battle.Mode.ANONYMOUS:  # the verdict is given: the names show
        battle.revealed = True
        fields.append("revealed")
        # The turns before it were judged blind as one conversation: the same pair, now named.
        Battle.objects.filter(id__in=battle.ancestor_ids(), mode=Battle.Mode.ANONYMOUS).update(revealed=True)
    battle.save(update_fields=fields)
    return True


def note_self_identification(battle: Battle) -> bool:
    """Flag the battle if an answer names a contestant, its own model or the other one (an alias,
    or the first word of a name): a blind judge who reads "I am Gemma" is no longer blind.
    Words the user's own turns use do not count: asked about Google, an answer may say Google."""
    asked = " ".join([battle.prompt, *(t.get("content", "") for t in battle.left.history if t.get("role") == "user")])
    words = [w for w in battle.left.model.identity_words() + battle.right.model.identity_words()
             if not identity_mentions(asked, [w])]
    flagged = any(identity_mentions(gen.text, words) for _side, gen in battle.sides)
    if flagged != battle.self_identified:
        battle.self_identified = flagged
        battle.save(update_fields=["self_identified"])
    return flagged


def note_side_ended(gen: Generation) -> None:
    """`gen` has just ended: if it is a battle's side, check that battle's answers again. Whoever
    ended it calls this (the sweeper, when the battle's own run was gone); the run itself checks
    once both sides are over (BattleRun.after). Every battle sharing the answer is checked (a
    comparison's or a tournament's answer has one; a suite's may have several)."""
    battles = (Battle.objects.select_related("left__model", "right__model")
               .filter(Q(left_id=gen.id) | Q(right_id=gen.id)))
    for battle in battles:
        note_self_identification(battle)


# --- anonymous battles: the pair drawn by arena/battles/anonymous.py ---------------------------
@transaction.atomic
def start_anonymous(user, *, prompt: str, params: dict | None = None, tag: str = "",
          origin: str = Generation.Origin.WEB, rng: random.Random | None = None) -> Battle:
    """A new anonymous battle on `prompt`. Raises NoPair, limits.LimitExceeded, ParamError."""
    chosen = anonymous.pick(rng)
    models = {m.slug: m for m in ModelEntry.objects.filter(slug__in=[chosen.left, chosen.right])}
    sides = {side: {"model": models[slug], "params": anonymous.blind_params(models[slug], params or {})}
             for side, slug in (("left", chosen.left), ("right", chosen.right))}
    battle = start_battle(user, prompt=prompt, sides=sides, mode=Battle.Mode.ANONYMOUS, blind=True, origin=origin,
                          tag=tag)
    battle.pick_reason = chosen.reason
    battle.save(update_fields=["pick_reason"])
    return battle


@transaction.atomic
def follow_up_anonymous(battle: Battle, prompt: str, origin: str = Generation.Origin.WEB) -> Battle:
    """Another turn of an unjudged anonymous battle: the same pair, each side continuing its own
    conversation, still blind (fresh seeds). Raises conversations.ConversationTooLong,
    limits.LimitExceeded."""
    for _side, gen in battle.sides:
        conversations.check(prompt=prompt, history=gen.conversation(), system_prompt=gen.system_prompt)
    sides = {side: {"model": gen.model, "system_prompt": gen.system_prompt, "history": gen.conversation(),
                    "params": {**gen.params, "seed": random.SystemRandom().randrange(2**32)}}
             for side, gen in battle.sides}
    nxt = start_battle(battle.owner, prompt=prompt, sides=sides, mode=Battle.Mode.ANONYMOUS, blind=True,
                       parent=battle, origin=origin, tag=battle.tag)
    nxt.pick_reason = battle.pick_reason
    nxt.save(update_fields=["pick_reason"])
    return nxt
