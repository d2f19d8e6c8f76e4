"""Who may manage a rater link: the owner of its run (through the run's own rule,
arena.suite_runs.access.access_run), and only a link of that run; anything else is a 404.
Whoever holds a link's token reaches that link's run's pairs only (arena.raters.views.rate)."""

from __future__ import annotations

from arena.access import NotFound
from arena.suite_runs.access import access_run

from .models import RaterLink


def access_link(user, run_id, link_id) -> RaterLink:
    run = access_run(user, run_id)
    link = RaterLink.objects.filter(run=run, id=link_id).select_related("run").first()
    if link is None:
        raise NotFound("No such rater link.")
    return link
