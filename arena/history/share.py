"""What a shared page shows: the object as its owner sees it, without any control.

The owner looks objects up through these too (only their own, and a generation only if
`visible()`), so a link can never be made to something its owner cannot open."""

from __future__ import annotations

from django.http import Http404

from arena.battles import presenting
from arena.battles.models import Battle
from arena.generations.models import Generation
from arena.suite_runs import report
from arena.suite_runs.models import SuiteRun
from arena.suites.models import Suite
from arena.tournaments import display
from arena.tournaments.models import Tournament

from .models import ShareLink


def owned(user, kind: str, object_id):
    """The user's own generation, battle, tournament, suite or suite run; 404 for anything else."""
    if kind == ShareLink.Kind.GENERATION:
        qs = Generation.objects.visible()
    elif kind == ShareLink.Kind.BATTLE:
        qs = Battle.objects.all()
    elif kind == ShareLink.Kind.TOURNAMENT:
        qs = Tournament.objects.all()
    elif kind == ShareLink.Kind.SUITE:
        qs = Suite.objects.all()
    elif kind == ShareLink.Kind.SUITE_RUN:
        qs = SuiteRun.objects.all()
    else:
        raise Http404("Nothing of that kind can be shared.")
    obj = qs.filter(id=object_id, owner=user).first()
    if obj is None:
        raise Http404("Nothing to share there.")
    return obj


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
