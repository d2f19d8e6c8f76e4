"""Who may see and act on a battle (arena/access.py lists every kind's rule)."""

from arena.access import reachable

from .models import Battle

# What "no such" names when the caller asked for one mode (the API's comparisons and arena).
_WHAT: dict[str | None, str] = {Battle.Mode.COMPARISON: "comparison", Battle.Mode.ANONYMOUS: "anonymous battle"}


def access_battle(user, battle_id, *, mode: str | None = None, blind: bool | None = None,
                  change: bool = True) -> Battle:
    """Its owner's (its team's to open: `change=False`), any mode. `mode` narrows it to one (a
    comparison's actions are refused on a tournament match or an anonymous battle, each judged on
    its own page); `blind=False` to a
    battle whose names were never hidden (the only kind a new comparison may copy or continue)."""
    battles = Battle.objects.select_related("left__model", "right__model")
    if mode is not None:
        battles = battles.filter(mode=mode)
    if blind is not None:
        battles = battles.filter(blind=blind)
    return reachable(battles, user, battle_id, _WHAT.get(mode, "battle"), change=change)
