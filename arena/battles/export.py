"""A battle as an export record (the history's export, a suite run's verdicts): both sides as
arena.generations.export writes a generation, with the verdict and a model judge's readings."""

from __future__ import annotations

from arena.generations.export import Absolute, iso, side_record

from .judging import by_judge, orders_agree
from .models import Battle

TIE_REASON = "the two orders disagreed"  # a model judge's tie that is not its verdict


def battle_record(battle: Battle, absolute: Absolute) -> dict:
    winner = {"left": battle.left, "right": battle.right}.get(battle.outcome)
    agree = orders_agree(battle.judgements) if battle.judge_id else None
    matches = list(battle.tournament_matches.all())  # prefetched
    return {
        "id": str(battle.id),
        "created_at": iso(battle.created_at),
        "mode": battle.mode,
        "blind": battle.blind,
        "tag": battle.tag,
        "prompt": battle.prompt,
        "history": battle.left.history,
        "outcome": battle.outcome or None,
        "winner_model": winner.model.slug if winner else None,
        "judge": battle.judge.slug if battle.judge is not None else None,  # a model judge's verdict, never a person's
        # Every judge whose readings made the verdict (a jury's majority; `judge` is its first seat).
        "jury": jury(battle),
        # A model judge's two readings (one per order shown) and whether they agreed: a pair on
        # which they disagree is a tie for that reason alone (arena.battles.judging).
        "judgements": battle.judgements if battle.judge_id else None,
        "orders_agree": agree,
        "tie_reason": TIE_REASON if agree is False else None,
        "voted_at": iso(battle.voted_at),
        # A person's note with the verdict (reason slugs, ReasonTag; a comment), where the names are.
        "reasons": list(battle.reasons) if battle.names_visible and battle.outcome else None,
        "comment": battle.comment if battle.names_visible and battle.outcome else None,
        "self_identified": battle.self_identified,
        "parent_id": str(battle.parent_id) if battle.parent_id else None,
        "tournament_id": str(matches[0].tournament_id) if matches else None,
        "left": side_record(battle.left),
        "right": side_record(battle.right),
        "permalink": absolute(battle.get_absolute_url()),
    }


def jury(battle: Battle) -> list[str] | None:
    """The slugs of the judges who read this pair, in order (one for a single judge; readings
    stored before juries name none: they are `battle.judge`'s); None for a person's verdict."""
    if battle.judge is None:
        return None
    return list(by_judge(battle.judgements, default=battle.judge.slug)) or [battle.judge.slug]
