"""The leaderboard's scope: everyone's verdicts (the default), those of the viewer's own work
(`mine`), or those of their current team's work by every member (`team`), on the page (a switch)
and in the API (`?scope=`), each cached apart; a user in no team has no team's to ask for."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from arena.accounts.models import ApiToken
from arena.battles.models import Battle
from arena.teams.membership import add_member
from arena.teams.models import Team
from tests.arena.api_client import api
from tests.arena.factories import leaderboard_order, verdict

pytestmark = pytest.mark.django_db


def user(name: str):
    return get_user_model().objects.create_user(name, password=f"{name}-pass-1")


@pytest.fixture
def people(owner):
    """owner and a colleague in Evals, a stranger in Elsewhere."""
    evals, elsewhere = Team.objects.create(name="Evals"), Team.objects.create(name="Elsewhere")
    colleague, stranger = user("colleague"), user("stranger")
    add_member(evals, owner)
    add_member(evals, colleague)
    add_member(elsewhere, stranger)
    return {"owner": owner, "colleague": colleague, "stranger": stranger, "evals": evals, "elsewhere": elsewhere}


def seeded(people, catalogue):
    """Evals: the owner's 3 verdicts for A over B. Elsewhere: the stranger's 5 for B over A."""
    a, b = catalogue[0], catalogue[1]
    for _ in range(3):
        battle = verdict(people["owner"], a, b, "left")
        assert battle.team == people["evals"]
    for _ in range(5):
        battle = verdict(people["stranger"], b, a, "left")
        assert battle.team == people["elsewhere"]
    return a.slug, b.slug


def board(client, who, query: str = "") -> dict:
    response = api(client, "get", f"/api/v1/leaderboard{query}", ApiToken.issue(who))
    assert response.status_code == 200, response.content
    return response.json()


def test_scope_team_counts_a_teammates_verdicts_and_not_another_teams(client, people, catalogue):
    a, b = seeded(people, catalogue)
    found = board(client, people["colleague"], "?scope=team")
    assert found["verdicts"] == 3 and found["filters"]["scope"] == "team"
    assert [e["model"] for e in found["entries"]] == [a, b]
    assert Battle.objects.filter(owner=people["colleague"]).count() == 0  # every one of them a teammate's


def test_scope_mine_counts_only_the_viewers_own_work(client, people, catalogue):
    seeded(people, catalogue)
    assert board(client, people["colleague"], "?scope=mine")["verdicts"] == 0
    assert board(client, people["owner"], "?scope=mine")["verdicts"] == 3
    assert board(client, people["stranger"], "?scope=mine")["verdicts"] == 5


def test_each_scope_is_cached_apart(client, people, catalogue, settings):
    settings.ARENA_LEADERBOARD_CACHE_S = 600
    a, b = seeded(people, catalogue)
    colleague = people["colleague"]
    assert [e["model"] for e in board(client, colleague, "?scope=team")["entries"]] == [a, b]
    assert [e["model"] for e in board(client, colleague)["entries"]] == [b, a]  # everyone's: 5 against 3
    assert board(client, colleague)["verdicts"] == 8
    assert board(client, people["stranger"], "?scope=team")["verdicts"] == 5  # another team: its own entry
    assert board(client, colleague, "?scope=team")["verdicts"] == 3


def test_the_page_switches_scope_and_says_which(client, people, catalogue):
    a, b = seeded(people, catalogue)
    client.force_login(people["colleague"])
    html = client.get("/leaderboard/?scope=team").content.decode()
    assert leaderboard_order(html) == [a, b]
    assert "Counting only the verdicts of Evals's work, by every member." in html
    assert 'data-scope="mine"' in html and 'aria-current="page" data-scope="team"' in html
    assert '<input type="hidden" name="scope" value="team">' in html  # the filters keep it
    assert leaderboard_order(client.get("/leaderboard/?scope=all").content.decode()) == [b, a]


def test_a_user_in_no_team_has_no_teams_scope(client, people, outsider, catalogue):
    seeded(people, catalogue)
    client.force_login(outsider)
    html = client.get("/leaderboard/?scope=team").content.decode()
    assert 'data-scope="team"' not in html
    assert "Counting everyone's verdicts." in html  # the team's asked for, everyone's shown, and said
    response = api(client, "get", "/api/v1/leaderboard?scope=team", ApiToken.issue(outsider))
    assert response.status_code == 400 and set(response.json()["error"]["fields"]) == {"scope"}
    wrong = api(client, "get", "/api/v1/leaderboard?scope=theirs", ApiToken.issue(outsider))
    assert wrong.status_code == 400 and "scope" in wrong.json()["error"]["fields"]


def test_the_tag_filter_lists_the_viewers_and_their_teams_tags_not_another_teams(client, people, catalogue):
    a, b = catalogue[0], catalogue[1]
    verdict(people["owner"], a, b, "left", tag="evals-own-tag")
    verdict(people["stranger"], b, a, "left", tag="elsewhere-secret-launch")
    client.force_login(people["colleague"])
    page = client.get("/leaderboard/").content.decode()
    assert "evals-own-tag" in page and "elsewhere-secret-launch" not in page
    client.force_login(people["stranger"])
    page = client.get("/leaderboard/").content.decode()
    assert "elsewhere-secret-launch" in page and "evals-own-tag" not in page
    # A tag the caller cannot see is no filter of theirs: the board is unfiltered, and says so.
    found = board(client, people["colleague"], "?tag=elsewhere-secret-launch")
    assert found["filters"]["tag"] == "" and found["verdicts"] == 2
    assert board(client, people["colleague"], "?tag=evals-own-tag")["verdicts"] == 1
