"""Raters for the anonymous arena's models: a suite's page offers a run of the arena's pool (the
entries its draw may pick, staff's exclusions left out) judged by people, and that run takes
rater links as any people-judged run does (tests/arena/raters/test_rater_links.py)."""

from __future__ import annotations

import re

import pytest

from arena.battles.anonymous import pool
from arena.battles.models import ArenaExclusion
from arena.suite_runs.models import SuiteRun
from tests.arena.factories import suite

pytestmark = pytest.mark.django_db


def test_a_suite_rated_on_the_arenas_models_through_a_rater_link(mine, owner, catalogue):
    ArenaExclusion.objects.create(model=catalogue[1], reason="too slow")
    s = suite(owner, "Capital of France?", "Capital of Peru?")
    assert 'id="suite-rate-arena"' in mine.get(f"/suites/{s.id}/").content.decode()
    page = mine.get(f"/suite-runs/new/?suite={s.id}&arena=1").content.decode()
    assert 'id="arena-preset"' in page
    chosen = re.findall(r'<option value="([\w.-]+)" selected>', page.split('class="contestants"')[1])
    expected = sorted(pool().values_list("slug", flat=True))[:SuiteRun.MAX_CONTESTANTS]
    assert chosen == expected and catalogue[1].slug not in chosen
    fields = {"suite": str(s.id), "format": "round_robin", **{f"contestant_{i}": slug
                                                            for i, slug in enumerate(chosen[:3], start=1)}}
    answer = mine.post("/suite-runs/new/", fields)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    run = SuiteRun.objects.get()
    assert run.judge is None and [m.slug for m in run.contestants] == chosen[:3]
    assert f'action="/suite-runs/{run.id}/raters/new"' in mine.get(f"/suite-runs/{run.id}/").content.decode()
