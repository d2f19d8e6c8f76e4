"""Verdicts of every kind for the leaderboard's views: the chart subjects (comparisons between the
eight default variants and a judged suite run, tests/arena/leaderboard/chart_subjects.py) plus
revealed tournament matches and voted anonymous battles, written straight to the database (no
model runs). Photographed by tests/live/test_leaderboard_browser.py through `manage.py shell -c`."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.utils import timezone

from arena.battles.models import Battle
from arena.catalogue.models import ModelEntry

from .chart_subjects import _answer
from .chart_subjects import seed as seed_charts


def seed(username: str | None = None) -> dict[str, str]:
    """Every kind of verdict, owned by `username` (default: the first staff user)."""
    out = seed_charts(username)
    users = get_user_model().objects
    owner = users.get(username=username) if username else users.filter(is_staff=True).order_by("pk").first()
    entries = {m.slug: m for m in ModelEntry.objects.all()}
    now = timezone.now()
    blind = [("smollm2-135m-llamacpp", "gemma-3-270m", "left"), ("smollm2-135m-llamacpp", "smollm2-135m", "left"),
             ("smollm2-135m-awq", "gemma-3-270m-llamacpp", "right")]
    for mode, pairs in ((Battle.Mode.TOURNAMENT, blind), (Battle.Mode.ANONYMOUS, blind[:2])):
        for left, right, outcome in pairs:
            Battle.objects.create(owner=owner, mode=mode, blind=True, revealed=True, outcome=outcome, voted_at=now,
                                  left=_answer(owner, entries[left], "Name a colour.", 40.0),
                                  right=_answer(owner, entries[right], "Name a colour.", 20.0))
    return out
