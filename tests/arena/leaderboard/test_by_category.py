"""The leaderboard by kind of prompt, on seeded verdicts whose answer is known: model A always
wins coding prompts, model B always wins support prompts. The per-category table and "prompts
like this one" must say so, with intervals that leave out a tie."""

import re

import pytest
from django.http import QueryDict
from django.urls import reverse

from arena.leaderboard import board, by_category, cache, records

from .category_subjects import seed_verdicts

pytestmark = pytest.mark.django_db

@pytest.fixture
def seeded(owner, catalogue):
    a, b = catalogue[0], catalogue[3]
    seed_verdicts(owner, a, b)
    return a, b


def cells(table: dict, column: str) -> dict:
    index = [c["name"] for c in table["columns"]].index(column)
    return {row["model"]: row["cells"][index] for row in table["rows"]}


def test_the_category_table_says_a_wins_coding_and_b_wins_support_with_intervals_leaving_out_a_tie(seeded):
    a, b = seeded
    table = by_category.table(board.parse(QueryDict(""), []), records.names())
    assert {c["name"]: c["verdicts"] for c in table["columns"]} == {"coding": 30, "support replies": 30, "": 0}
    for column, best, worst in (("coding", a, b), ("support replies", b, a)):
        got = cells(table, column)
        assert got[best.slug].lower > 1000 > got[worst.slug].upper  # the ratings' 95% intervals part at the mean
        assert got[best.slug].rate_lower > 0.5 > got[worst.slug].rate_upper  # and the win rates' leave out 50%
        assert got[best.slug].verdicts == 30 and got[best.slug].enough


def test_the_page_shows_the_table_and_not_enough_verdicts_below_the_floor(client, owner, seeded, settings):
    client.force_login(owner)
    html = client.get(reverse("leaderboard")).content.decode()
    section = html[html.index('id="category-table"'):]
    section = section[:section.index("</table>")]
    assert 'data-category="coding"' in section and "not enough verdicts" not in section
    settings.ARENA_LEADERBOARD_PROVISIONAL_VERDICTS = 31
    cache.bump_now_and_on_commit()  # the page is cached per verdict generation; settings change only here
    html = client.get(reverse("leaderboard")).content.decode()
    assert html.count('<span class="verdict">not enough verdicts</span>') == 4


def test_the_api_carries_the_per_category_table(client, token, seeded):
    a, _b = seeded
    body = client.get(reverse("api-leaderboard-categories"), HTTP_AUTHORIZATION=f"Bearer {token}").json()
    coding = next(c for c in body["categories"] if c["name"] == "coding")
    entry = next(e for e in coding["entries"] if e["model"] == a.slug)
    assert entry["interval"][0] > 1000 and entry["win_rate_interval"][0] > 0.5 and entry["enough_verdicts"]


def test_prompts_like_this_one_rank_on_the_nearest_verdicts_and_say_how(client, owner, seeded):
    a, b = seeded
    f = board.parse(QueryDict(""), [])
    coding = by_category.like(f, "Write a Python function that sorts a list of numbers", records.names())
    assert coding["verdicts"] == by_category.SIMILAR_COUNT == 30  # all 30 of them coding prompts
    top, second = coding["rows"][0], coding["rows"][1]
    assert top["model"] == a.slug and top["row"].lower > second["row"].upper
    support = by_category.like(f, "A customer wants a refund on a late order: reply politely", records.names())
    assert support["rows"][0]["model"] == b.slug and support["rows"][0]["row"].lower > 1000
    client.force_login(owner)
    html = client.post(reverse("leaderboard-like"), {"prompt": "Write a Python function that sorts numbers"}
                       ).content.decode()
    assert "chrF" in html and "no embedding model is installed" in html
    assert re.search(r"Fitted on <strong>\d+ verdicts</strong>", html)
    assert re.findall(r'<tr data-model="([^"]+)"', html)[0] == a.slug
    assert client.post(reverse("leaderboard-like"), {"prompt": "  "}).status_code == 400
    assert client.post(reverse("leaderboard-like"), {"prompt": "x" * 20_001}).status_code == 400


def test_the_similar_api_refuses_a_missing_prompt_with_a_code(client, token, seeded):
    a, _b = seeded
    url = reverse("api-leaderboard-similar")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    bad = client.post(url, "{}", content_type="application/json", **auth)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_request"
    body = client.post(url, {"prompt": "Fix the bug in this Python function"}, content_type="application/json",
                       **auth).json()
    assert body["entries"][0]["model"] == a.slug and "chrF" in body["similarity"] and body["verdicts"] > 0
