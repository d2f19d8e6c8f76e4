"""Few verdicts, as issue 35 found them: one comparison verdict (SmolLM2 beat Gemma), and nine ties
among three models from revealed tournament matches, written straight to the database (no model
runs), so `?kind=comparison` shows the one verdict and `?kind=tournament` the nine ties.
Photographed by tests/live/test_ratings_browser.py through `manage.py shell -c`."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.utils import timezone

from arena.battles.models import Battle
from arena.catalogue.models import ModelEntry

from .chart_subjects import _answer

TIED = ("smollm2-135m", "smollm2-135m-awq", "gemma-3-270m")
TAGS = {Battle.Mode.COMPARISON: "few-verdicts-one", Battle.Mode.TOURNAMENT: "few-verdicts-ties"}


def seed(username: str) -> None:
    owner = get_user_model().objects.get(username=username)
    entries = {m.slug: m for m in ModelEntry.objects.all()}
    now = timezone.now()

    def battle(left: str, right: str, outcome: str, mode: str, blind: bool) -> None:
        tag = TAGS[mode]  # the shared live app holds other tests' verdicts: each view is its tag's
        Battle.objects.create(owner=owner, mode=mode, blind=blind, revealed=blind, outcome=outcome, voted_at=now,
                              tag=tag,
                              left=_answer(owner, entries[left], "Name a colour.", 30.0),
                              right=_answer(owner, entries[right], "Name a colour.", 30.0))

    battle("smollm2-135m", "gemma-3-270m", "left", Battle.Mode.COMPARISON, False)
    for _ in range(3):
        for i in range(3):
            battle(TIED[i], TIED[(i + 1) % 3], "tie", Battle.Mode.TOURNAMENT, True)
