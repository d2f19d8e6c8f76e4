"""A finished, judged suite run (tests/arena/leaderboard/chart_subjects.py) and a revealed bracket of
four (its matches played as tests/arena/factories.play_through plays them, no model runs): what
the "What to pick" summaries are photographed on by tests/live/test_decision_browser.py, in the
running application (`manage.py shell -c`)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from arena.catalogue.defaults import DEFAULT_ENTRIES
from arena.catalogue.models import ModelEntry
from arena.tournaments.actions import start_tournament
from tests.arena.factories import play_through
from tests.arena.leaderboard.chart_subjects import seed as seed_run


def seed(username: str) -> dict[str, str]:
    """The run's and the tournament's ids, owned by `username`."""
    subjects = seed_run(username)
    owner = get_user_model().objects.get(username=username)
    slugs = [e["slug"] for e in DEFAULT_ENTRIES[:4]]
    contestants = sorted(ModelEntry.objects.filter(slug__in=slugs), key=lambda m: slugs.index(m.slug))
    # One transaction: its battles' tasks, queued on commit, find both sides already done and stop.
    with transaction.atomic():
        t = start_tournament(owner, contestants=contestants, prompt="Name a colour.",
                             params={"temperature": 0.7, "max_new_tokens": 16}, seeding="given")
        play_through(t)
    return {**subjects, "tournament": str(t.id)}
