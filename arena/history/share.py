"""What a shared page shows: the object as its owner sees it, without any control.

The owner looks objects up through these too (only their own, and a generation only if
`visible()`), so a link can never be made to something its owner cannot open."""

from __future__ import annotations

from collections.abc import Callable

from django.http import Http404

from arena.battles import presenting
from arena.battles.access import access_battle
from arena.generations.access import access_generation
from arena.generations.models import Generation
from arena.suite_runs import report
from arena.suite_runs.access import access_run
from arena.suites.access import access_suite
from arena.tournaments import display
from arena.tournaments.access import access_tournament
from arena.tournaments.models import Tournament

from .models import ShareLink

# Each kind's own access rule (arena/access.py): a link is made only to what its owner may open.
ACCESS: dict[str, Callable] = {ShareLink.Kind.GENERATION: access_generation, ShareLink.Kind.BATTLE: access_battle,
          ShareLink.Kind.TOURNAMENT: access_tournament, ShareLink.Kind.SUITE: access_suite,
          ShareLink.Kind.SUITE_RUN: access_run}


def owned(user, kind: str, object_id):
    """The user's own generation, battle, tournament, suite or suite run; 404 for anything else."""
    if kind not in ACCESS:
        raise Http404("Nothing of that kind can be shared.")
    return ACCESS[kind](user, object_id)


def page(link: ShareLink) -> tuple[str, dict]:
    """The template and context of a shared page (the link is active)."""
    kind, target = link.kind, link.target
    if kind == ShareLink.Kind.GENERATION:
        # Re-checked on every view: a blind battle's answer is never shown before the reveal.
        if not Generation.objects.visible().filter(id=target.id).exists():
            raise Http404("No such link.")
        return "history/share_generation.html", {"gen": target, "still_running": not target.finished}
    if kind == ShareLink.Kind.BATTLE:
        return "history/share_battle.html", {"battle": target, "shown": presenting.shown(target),
                                            "still_running": not target.finished}
    if kind == ShareLink.Kind.SUITE:
        return "history/share_suite.html", {"suite": target, "prompts": target.ordered_prompts()}
    if kind == ShareLink.Kind.SUITE_RUN:
        return "history/share_suite_run.html", {**report.page(target), "still_running": target.live}
    return "history/share_tournament.html", {**tournament_context(target),
                                             "still_running": target.state == Tournament.State.RUNNING}


def tournament_context(tournament: Tournament) -> dict:
    """What the tournament's own page shows, less its forms: the bracket under neutral
    labels and the current match until the reveal; then names, speeds and every answer."""
    current = tournament.current_match() if not tournament.revealed else None
    columns = display.bracket_view(tournament)
    matches = [m for column in columns for m in column["matches"]]
    return {
        "tournament": tournament,
        "columns": columns,
        "current": current,
        "current_labels": (current.slot_label("left"), current.slot_label("right")) if current else (),
        "battle": current.battle if current else None,
        "shown": presenting.shown(current.battle) if current and current.battle else None,
        "played": sum(1 for m in matches if m["state"] == "decided"),
        "total": len(matches),
        "answered": [{**m, "shown": presenting.shown(m["match"].battle)}
                     for m in matches if m["match"].battle is not None] if tournament.revealed else [],
    }
