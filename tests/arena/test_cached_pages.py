"""Cached pages (docs/security.md, "Cached pages"): the leaderboard computed once per filter until
a verdict lands, share links' views counted without a database write, /healthz's checks once
per period."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from arena import health, scheduler
from arena.battles.actions import vote
from arena.battles.models import Battle
from arena.history import view_counts
from arena.history.models import ShareLink
from arena.leaderboard import cache, ratings
from arena.tournaments.actions import finish_tournament, start_tournament
from tests.arena.factories import comparison, leaderboard_order, verdict

pytestmark = pytest.mark.django_db


def unmasked(html: str) -> str:
    """The page without its CSRF token (masked afresh on every response)."""
    return re.sub(r'"X-CSRFToken": "\w+"|name="csrfmiddlewaretoken" value="\w+"', "", html)


@pytest.fixture
def fits(monkeypatch):
    """Counts the leaderboard's computations (each is 201 Bradley–Terry fits)."""
    calls = []
    real = ratings.leaderboard

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ratings, "leaderboard", counted)
    return calls


def test_the_leaderboard_is_computed_once_per_filter_until_a_verdict_lands(client, owner, catalogue, fits):
    smollm, _spec, _awq, gemma = catalogue[:4]
    for _ in range(3):
        verdict(owner, smollm, gemma, "left")
    client.force_login(owner)
    first = client.get(reverse("leaderboard")).content.decode()
    second = client.get(reverse("leaderboard")).content.decode()
    assert len(fits) == 1 and unmasked(first) == unmasked(second) and "from 3 verdicts" in first
    assert leaderboard_order(first) == ["smollm2-135m", "gemma-3-270m"]
    client.get(reverse("leaderboard") + "?mode=named")  # another filter: its own entry
    assert len(fits) == 2
    # A new verdict: every filter is computed again, and shows it.
    battle = comparison(owner, smollm, gemma)
    assert vote(battle, "right")
    page = client.get(reverse("leaderboard")).content.decode()
    assert len(fits) == 3 and "from 4 verdicts" in page
    client.get(reverse("leaderboard"))
    assert len(fits) == 3


def test_a_bump_recomputes(client, owner, catalogue, fits):
    smollm, _spec, _awq, gemma = catalogue[:4]
    verdict(owner, smollm, gemma, "left")
    client.force_login(owner)
    client.get(reverse("leaderboard"))
    before = cache.generation()
    cache.bump_now_and_on_commit()
    assert cache.generation() != before
    client.get(reverse("leaderboard"))
    assert len(fits) == 2


def test_a_tournament_reveal_bumps_the_verdict_generation(owner, catalogue):

    tournament = start_tournament(owner, contestants=catalogue[:4], prompt="Name a colour.", params={},
                                  seeding="given")
    before = cache.generation()
    finish_tournament(tournament, catalogue[0])
    assert cache.generation() != before


def test_the_counter_survives_a_redis_restart_without_reusing_a_number():
    from arena import streams

    before = cache.generation()
    streams.client().delete(streams.keys().verdict_generation())  # what a Redis restart does
    after = cache.generation()
    assert after is not None and after != before
    cache.bump()
    assert cache.generation() == str(int(after) + 1)


def test_viewing_a_share_link_writes_nothing_to_the_database(client, owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[3])
    link = ShareLink.share(owner, battle)
    url = f"/s/{link.token}/"
    anonymous = client.__class__()
    with CaptureQueriesContext(connection) as queries:
        for _ in range(3):
            assert anonymous.get(url).status_code == 200
    writes = [q["sql"] for q in queries.captured_queries
              if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]
    assert writes == []
    assert list(view_counts.pending()) == [link.id] and view_counts.pending()[link.id][0] == 3
    link.refresh_from_db()
    assert link.views == 0  # not yet added up
    assert view_counts.flush() == 1
    link.refresh_from_db()
    assert link.views == 3 and link.last_viewed_at is not None
    assert view_counts.pending() == {} and view_counts.flush() == 0
    anonymous.get(url)
    view_counts.flush()
    link.refresh_from_db()
    assert link.views == 4


def test_the_orchestrators_loop_flushes_once_per_the_settings_period(settings):
    """The flush is a periodic job (arena/scheduler.py, which runs a job at most once per period)."""
    job = scheduler.default.jobs["share-link views"]
    assert job.run is view_counts.flush
    settings.ARENA_SHARE_VIEWS_FLUSH_S = 60
    assert job.period_s() == 60


def test_healthz_pings_celery_once_per_period(client, settings, monkeypatch):
    settings.ARENA_HEALTH_CACHE_S = 60
    pings = []
    monkeypatch.setattr(health, "_celery", lambda: pings.append(1) or {"workers": 1})
    monkeypatch.setattr(health, "_orchestrator", lambda: None)
    for _ in range(5):
        response = client.get("/healthz")
        assert response.status_code == 200 and response.json()["status"] == "ok"
    assert pings == [1]
    health.reset_cache()
    client.get("/healthz")
    assert pings == [1, 1]


def test_a_failing_healthz_answer_is_kept_at_most_a_second(client, settings, monkeypatch):
    settings.ARENA_HEALTH_CACHE_S = 60
    pings = []
    monkeypatch.setattr(health, "_celery", lambda: pings.append(1) or {"workers": 1})
    client.get("/healthz")  # the orchestrator is not heartbeating here: 503
    client.get("/healthz")
    assert pings == [1]
    monkeypatch.setattr(health.time, "monotonic", lambda real=health.time.monotonic: real() + 1.5)
    client.get("/healthz")
    assert pings == [1, 1]


def test_saving_or_deleting_a_battle_with_a_verdict_bumps_the_verdict_generation(owner, catalogue):
    before = cache.generation()
    battle = comparison(owner, catalogue[0], catalogue[3])
    assert cache.generation() == before  # no verdict yet: nothing changes on the leaderboard
    assert vote(battle, "left")
    voted = cache.generation()
    Battle.objects.get(id=battle.id).delete()
    assert len({before, voted, cache.generation()}) == 3
