"""History and its exports, "mine" or "my team's" (issue 38): the team's scope lists every
member's work in the viewer's current team, each row naming its owner, and nothing of another
team; a teammate's unrevealed blind items stay blind (no model name in the list or the export);
the exports say whose each row is and carry a verdict's reasons and comment, the prompt's
category and a rater link's name. No model runs: tests finish generations as the tasks would."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from arena.accounts.models import ApiToken
from arena.battles.actions import vote
from arena.battles.models import Battle
from arena.battles.voting import Note
from arena.categories.models import Category, Rule
from arena.raters.actions import create_link
from arena.suite_runs.actions import record_human_verdict, start_run
from arena.teams.membership import NO_TEAM, add_member
from arena.teams.models import Team
from arena.tournaments.actions import start_tournament
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import BLIND_PARAMS, comparison, generation, identifiers, reason_tags, suite
from tests.arena.suite_runs.running import run_to_end

pytestmark = pytest.mark.django_db

TEAM_NAME = "Zq Larkspur Team"
CATEGORY_NAME = "Zq Quillwort Category"
RATER_NAME = "Zq Bramble Rater"
COMMENT = "Zq the left one cites its sources"


# --- helpers -----------------------------------------------------------------------------
@pytest.fixture
def team(owner):
    team = Team.objects.create(name=TEAM_NAME)
    add_member(team, owner)
    return team


@pytest.fixture
def mate(team):
    user = get_user_model().objects.create_user("zqmate", password="mate-pass-1")
    add_member(team, user)
    return user


@pytest.fixture
def stranger(outsider):
    """A member of another team."""
    add_member(Team.objects.create(name="Zq Other Team"), outsider)
    return outsider


@pytest.fixture
def category():
    """A category every prompt with the word "zqword" falls into, by rule."""
    found = Category.objects.create(name=CATEGORY_NAME)
    Rule.objects.create(category=found, kind=Rule.Kind.KEYWORDS, value="zqword")
    return found


def rows_of(html: str) -> list[str]:
    return re.findall(r'<tr data-id="([0-9a-f-]{36})"', html)


def body(response) -> str:
    return b"".join(response.streaming_content).decode()


def exported(client, dataset: str, fmt: str = "json", **params):
    response = client.get(f"/history/export/{dataset}.{fmt}", params)
    assert response.status_code == 200
    text = body(response)
    return json.loads(text)["rows"] if fmt == "json" else list(csv.DictReader(io.StringIO(text)))


# --- the lists -----------------------------------------------------------------------------
def test_a_user_in_no_team_sees_no_switch_and_team_scope_is_their_own(client, owner, catalogue):
    mine = comparison(owner, catalogue[0], catalogue[1], "Name a zq colour.")
    client.force_login(owner)
    html = client.get(reverse("history-comparisons"), {"scope": "team"}).content.decode()
    assert "My team's" not in html and 'name="scope"' not in html
    assert rows_of(html) == [str(mine.id)]


def test_team_scope_lists_every_members_work_naming_its_owner_and_nothing_of_another_team(
        client, owner, team, mate, stranger, catalogue):
    own = comparison(owner, catalogue[0], catalogue[1], "Mine: name a colour.")
    theirs = comparison(mate, catalogue[0], catalogue[1], "Mate's: name a colour.")
    other = comparison(stranger, catalogue[0], catalogue[1], "Stranger's: name a colour.")
    gen = generation(mate, catalogue[2], "Mate's lone prompt", text="Blue.", team=team)  # the factory sets none
    client.force_login(owner)

    mine_html = client.get(reverse("history-comparisons")).content.decode()
    assert rows_of(mine_html) == [str(own.id)]
    assert f"My team's ({TEAM_NAME})" in mine_html  # the switch, "Mine" current

    html = client.get(reverse("history-comparisons"), {"scope": "team"}).content.decode()
    assert set(rows_of(html)) == {str(own.id), str(theirs.id)} and str(other.id) not in html
    assert "<th>Owner</th>" in html and "zqmate" in html and "(read-only)" in html
    assert theirs.get_absolute_url() in html  # a teammate's row opens its (read-only) page
    assert "Others' items open read-only" in html
    assert "?scope=team" in html  # the tabs and the exports keep the scope
    assert "/history/export/battles.csv?scope=team" in html

    gens = client.get(reverse("history"), {"scope": "team"}).content.decode()
    assert rows_of(gens) == [str(gen.id)] and "zqmate" in gens
    assert rows_of(client.get(reverse("history")).content.decode()) == []


def test_a_teammates_unrevealed_blind_work_names_no_model_in_history_or_the_exports(
        client, owner, mate, catalogue):
    models = catalogue[:4]
    anonymous = comparison(mate, models[0], models[1], "Which colour is the sea?", mode=Battle.Mode.ANONYMOUS,
                           blind=True)
    tournament = start_tournament(mate, contestants=models, prompt="Which colour is the sky?", params=BLIND_PARAMS,
                                  seeding="given")
    assert anonymous.team is not None and tournament.team == anonymous.team
    client.force_login(owner)

    pages = {tab: client.get(reverse(tab), {"scope": "team"}).content.decode()
             for tab in ("history-anonymous", "history-tournaments", "history-comparisons", "history")}
    assert str(anonymous.id) in pages["history-anonymous"] and str(tournament.id) in pages["history-tournaments"]
    assert "Model A" in pages["history-anonymous"] and "(names at the reveal)" in pages["history-tournaments"]
    assert "judge it" not in pages["history-anonymous"]  # only its owner votes
    files = {f"battles.{fmt}": body(client.get("/history/export/battles." + fmt, {"scope": "team"}))
             for fmt in ("csv", "json")}
    files["generations.json"] = body(client.get("/history/export/generations.json", {"scope": "team"}))
    for name, text in {**pages, **files}.items():
        for identifier in identifiers(models):
            assert identifier not in text, (name, identifier)
    assert str(anonymous.id) not in files["battles.json"]


# --- the exports -----------------------------------------------------------------------------
NOW = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)


def rated_suite_pair(owner, models) -> Battle:
    """A suite run's pair judged through a rater link named RATER_NAME, its names revealed (as the
    link's end reveals them)."""
    run = start_run(owner, suite=suite(owner, "Capital of zqword France?"), contestants=models)
    run_to_end(run, answer="Paris")
    link, _token = create_link(run, name=RATER_NAME, expires_at=NOW + timedelta(days=1), cap=5, now=NOW)
    pair = run.people_pairs()[0]
    battle = record_human_verdict(run, None, pair.left.id, pair.right.id, "left", rater=link, now=NOW)
    Battle.objects.filter(id=battle.id).update(revealed=True)
    return battle


def test_exports_say_whose_each_row_is_with_reasons_category_and_rater_name(
        client, owner, mate, stranger, category, catalogue):
    reasons = reason_tags()[:2]
    theirs = comparison(mate, catalogue[0], catalogue[1], "Name a zqword colour.")
    assert vote(theirs, "left", Note(comment=COMMENT, reasons=tuple(reasons)))
    pair = rated_suite_pair(owner, catalogue[:2])
    other = comparison(stranger, catalogue[0], catalogue[1], "Name a zqword colour.")
    gen = generation(mate, catalogue[2], "A zqword generation", text="Blue.", team=theirs.team)
    client.force_login(owner)

    document = json.loads(body(client.get("/history/export/battles.json", {"scope": "team"})))
    assert_conforms(document, "/api/v1/export/battles")  # the page's export is the API's
    rows = {r["id"]: r for r in document["rows"]}
    assert set(rows) == {str(theirs.id), str(pair.id)} and str(other.id) not in rows
    row = rows[str(theirs.id)]
    assert (row["owner"], row["team"], row["category"]) == ("zqmate", TEAM_NAME, CATEGORY_NAME)
    assert (row["reasons"], row["comment"], row["rater_name"]) == (reasons, COMMENT, None)
    suite_row = rows[str(pair.id)]
    assert (suite_row["owner"], suite_row["rater_name"], suite_row["category"]) == ("owner", RATER_NAME, CATEGORY_NAME)

    flat = {r["id"]: r for r in exported(client, "battles", "csv", scope="team")}
    assert flat[str(theirs.id)]["reasons"] == json.dumps(reasons)
    assert (flat[str(theirs.id)]["team"], flat[str(theirs.id)]["comment"]) == (TEAM_NAME, COMMENT)
    assert (flat[str(pair.id)]["rater_name"], flat[str(pair.id)]["category"]) == (RATER_NAME, CATEGORY_NAME)

    runs = client.get(reverse("history-suite-runs"), {"scope": "team"}).content.decode()
    assert rows_of(runs) == [str(pair.rater_verdict.run_id)] and '<td class="owner">you</td>' in runs

    mine = exported(client, "battles")  # the default scope: the owner's own, the suite pair
    assert [r["id"] for r in mine] == [str(pair.id)]
    gens = exported(client, "generations", "csv", scope="team")
    assert [(g["id"], g["owner"], g["team"]) for g in gens] == [(str(gen.id), "zqmate", TEAM_NAME)]


def test_a_row_made_in_no_team_says_so(client, owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[1])
    client.force_login(owner)
    (row,) = exported(client, "battles")
    assert (row["id"], row["owner"], row["team"], row["category"], row["rater_name"]) == (
        str(battle.id), "owner", "", None, None)


def test_the_api_export_takes_the_scope_and_refuses_team_to_one_in_no_team(client, owner, outsider, token, mate,
                                                                          catalogue):
    theirs = comparison(mate, catalogue[0], catalogue[1])
    response = api(client, "get", "/api/v1/export/battles?scope=team", token)
    found = json.loads(body(response))
    assert [r["id"] for r in found["rows"]] == [str(theirs.id)] and found["filters"] == {"scope": "team"}
    assert_conforms(found, "/api/v1/export/battles")
    assert json.loads(body(api(client, "get", "/api/v1/export/battles", token)))["rows"] == []

    bad = api(client, "get", "/api/v1/export/generations?scope=everyone", token)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_request"
    assert "scope" in bad.json()["error"]["fields"]

    comparison(outsider, catalogue[0], catalogue[1])  # made in no team: theirs, not a team's
    lone = ApiToken.issue(outsider, "lone")
    alone = api(client, "get", "/api/v1/export/battles?scope=team", lone)
    assert alone.status_code == 400 and alone.json()["error"]["fields"] == {"scope": NO_TEAM}
