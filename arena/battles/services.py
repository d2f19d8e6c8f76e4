"""Starting battles, shared by the pages, the API and tournaments."""

from __future__ import annotations

import uuid

from django.db import transaction

from arena import conversations
from arena.generations import services
from arena.generations.models import Generation
from arena.generations.services import GenerationRequest

from .models import Battle


@transaction.atomic
def start_battle(user, *, prompt: str, sides: dict[str, dict], mode: str = Battle.Mode.COMPARISON,
                 blind: bool = False, parent: Battle | None = None, origin: str = Generation.Origin.WEB,
                 tag: str = "") -> Battle:
    """`sides`: {"left": {model, system_prompt, params, history}, "right": {...}}.

    A web battle is cancelled when every viewer has left; an API one runs to the end.
    Raises limits.LimitExceeded when the user may not start it now (it costs one per side)."""
    battle_id = uuid.uuid4()  # the run the two sides belong to: they start together
    left, right = services.start(
        user, [GenerationRequest(model=s["model"], prompt=prompt, system_prompt=s.get("system_prompt") or "",
                                 params=s["params"], history=s.get("history") or (), tag=tag)
               for s in (sides["left"], sides["right"])],
        origin=origin, kind=Battle.RUN_KIND, run_id=battle_id)
    return Battle.objects.create(id=battle_id, owner=user, mode=mode, blind=blind, left=left, right=right,
                                 parent=parent, tag=tag)


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
