"""Few verdicts read honestly on the leaderboard page and in its API: one verdict, or nine ties
among three models, give intervals of positive width, rank ranges over more than one place, "not
enough verdicts" in place of a rank below the provisional floor, and the provisional mark in the
table, the chart and every API entry (with the floor)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import verdict

pytestmark = pytest.mark.django_db

TOP, SPEC, GEMMA = "smollm2-135m", "smollm2-135m-spec", "gemma-3-270m"


@pytest.fixture
def one(owner, catalogue):
    smollm, _spec, _awq, gemma = catalogue[:4]
    verdict(owner, smollm, gemma, "left")
    return catalogue


@pytest.fixture
def nine_ties(owner, catalogue):
    smollm, spec, _awq, gemma = catalogue[:4]
    for _ in range(3):
        verdict(owner, smollm, spec, "tie")
        verdict(owner, spec, gemma, "tie")
        verdict(owner, gemma, smollm, "tie")
    return catalogue


def cells(html: str) -> dict[str, dict[str, str]]:
    """Per table row (model slug): its rank, interval and rank range cells as text."""
    rows = {}
    for slug, body in re.findall(r'<tr data-model="([^"]+)"[^>]*>(.*?)</tr>', html, re.S):
        rank = re.search(r'<td class="rank">(.*?)</td>', body, re.S)
        interval = re.search(r'<td class="interval">(-?\d+) – (-?\d+)</td>', body)
        ranks = re.search(r'<td class="rank-range">(.*?)</td>', body)
        assert rank and interval and ranks, body
        rows[slug] = {"rank": rank.group(1), "lower": int(interval.group(1)), "upper": int(interval.group(2)),
                      "range": ranks.group(1)}
    return rows


def chart_bars(html: str) -> dict[str, str]:
    return dict(re.findall(r'<g class="bar[^"]*" data-model="([^"]+)">(.*?)</g>', html, re.S))


def test_one_verdict_reads_as_not_enough(client, owner, one, token):
    client.force_login(owner)
    html = client.get(reverse("leaderboard")).content.decode()
    rows = cells(html)
    assert set(rows) == {TOP, GEMMA}
    for row in rows.values():
        assert row["upper"] - row["lower"] > 100  # not "1131 – 1131"
        assert row["rank"] == "not enough verdicts" and row["range"] == "1st–2nd"
    assert rows[TOP]["lower"] < rows[GEMMA]["upper"]  # one verdict cannot separate them
    bars = chart_bars(html)
    assert set(bars) == {TOP, GEMMA}
    for body in bars.values():
        assert 'stroke-dasharray="5 3"' in body and "provisional: too few verdicts to rank" in body
        assert "(provisional: fewer than 30 verdicts)" in body
    assert "Dashed: provisional, rated on fewer than 30 verdicts in this view." in html
    assert "in place of a rank it reads &ldquo;not enough verdicts&rdquo;" in html
    body = api(client, "get", "/api/v1/leaderboard", token).json()
    assert_conforms(body, "/api/v1/leaderboard")
    for entry in body["entries"]:
        assert entry["provisional"] is True and entry["provisional_floor"] == 30
        assert entry["rank_shown"] == "not enough verdicts" and entry["rank_range"] == "1st–2nd"
        low, high = entry["interval"]
        assert high - low > 100 and entry["rating_sd"] > 0


def test_nine_ties_among_three_leave_every_place_open(client, owner, nine_ties):
    client.force_login(owner)
    rows = cells(client.get(reverse("leaderboard")).content.decode())
    assert set(rows) == {TOP, SPEC, GEMMA}
    for row in rows.values():
        assert row["lower"] < 1000 < row["upper"] and row["upper"] - row["lower"] > 100  # not "1000 – 1000"
        assert row["rank"] == "not enough verdicts" and row["range"] == "1st–3rd"


def test_at_the_floor_the_rank_is_a_number_and_the_mark_goes(client, owner, one, settings):
    settings.ARENA_LEADERBOARD_PROVISIONAL_VERDICTS = 1
    client.force_login(owner)
    html = client.get(reverse("leaderboard")).content.decode()
    rows = cells(html)
    assert rows[TOP]["rank"] == rows[GEMMA]["rank"] == "1"  # intervals overlap: they share the rank
    assert "too few verdicts to rank" not in html and "Dashed: provisional" not in html
    assert not any("stroke-dasharray" in body for body in chart_bars(html).values())
