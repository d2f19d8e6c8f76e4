"""A team's suites and suite runs: a colleague opens a colleague's suite, run, pass matrix, comparison
and exports read-only (the page says so and offers nothing they cannot use), every write of theirs
is refused 403 read_only, and anyone outside the team gets a 404; the blind judging stays the
owner's, and its names show nobody anything before the owner's reveal."""

from __future__ import annotations

import pytest

from arena.accounts.models import ApiToken
from arena.battles.models import Battle
from arena.suite_runs.actions import record_human_verdict, reveal_for, start_run
from arena.suites.models import Suite
from arena.teams.membership import NO_TEAM
from tests.arena.api_client import api
from tests.arena.factories import suite
from tests.arena.suite_runs.running import run_to_end

pytestmark = pytest.mark.django_db

READ_ONLY = "Read-only: owner's, in Evals. Only its owner and staff change it."


def as_user(client, who):
    client.force_login(who)
    return client


def judged_run(owner, models, the_suite=None):
    """A finished round robin judged by a model (the owner's current team's, as start_run sets)."""
    run = start_run(owner, suite=the_suite or suite(owner, "Capital of France?", tag="geo"), contestants=models,
                    judge_model=models[0])
    run_to_end(run)
    run.refresh_from_db()
    return run


def body(response) -> str:
    return (response.getvalue() if response.streaming else response.content).decode()


# --- suites ---------------------------------------------------------------------------------
def test_a_member_opens_a_colleagues_suite_read_only(client, owner, colleague):
    s = suite(owner)
    assert s.team.name == "Evals"
    html = as_user(client, colleague).get(f"/suites/{s.id}/").content.decode()
    assert READ_ONLY in html
    for control in (f"/suites/{s.id}/delete", f"/suites/{s.id}/import", "suite-run-this"):
        assert control not in html, control
    assert client.get(f"/suites/{s.id}/suite.yaml").status_code == 200


def test_the_owner_sees_no_read_only_line_and_every_control(client, owner, colleague):
    s = suite(owner)
    html = as_user(client, owner).get(f"/suites/{s.id}/").content.decode()
    assert "Read-only" not in html
    for control in (f"/suites/{s.id}/delete", f"/suites/{s.id}/import", "suite-run-this"):
        assert control in html, control


def test_a_members_writes_to_a_colleagues_suite_are_refused(client, owner, colleague):
    s = suite(owner)
    page = as_user(client, colleague)
    assert page.post(f"/suites/{s.id}/delete").status_code == 403
    assert page.post(f"/suites/{s.id}/import", {}).status_code == 403
    token = ApiToken.issue(colleague)
    assert api(client, "get", f"/api/v1/suites/{s.id}", token).status_code == 200
    assert api(client, "get", f"/api/v1/suites/{s.id}/suite.yaml", token).status_code == 200
    for method, body_ in (("delete", None), ("put", {"name": "Mine now"})):
        response = api(client, method, f"/api/v1/suites/{s.id}", token, body_)
        assert response.status_code == 403 and response.json()["error"]["code"] == "read_only", method
    assert Suite.objects.get(id=s.id).name == "Capitals"


@pytest.mark.parametrize("who", ["stranger", "outsider"])
def test_anyone_outside_the_team_gets_404_for_a_suite(client, owner, team, stranger, outsider, who):
    s = suite(owner)
    other = {"stranger": stranger, "outsider": outsider}[who]
    page = as_user(client, other)
    assert page.get(f"/suites/{s.id}/").status_code == 404
    assert page.get(f"/suites/{s.id}/suite.yaml").status_code == 404
    response = api(client, "get", f"/api/v1/suites/{s.id}", ApiToken.issue(other))
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


def test_the_suite_list_shows_mine_or_my_teams(client, owner, colleague, stranger):
    theirs, own = suite(owner, name="Owner suite"), suite(colleague, name="Member suite")
    elsewhere = suite(stranger, name="Elsewhere suite")
    page = as_user(client, colleague)
    mine = page.get("/suites/").content.decode()
    assert own.name in mine and theirs.name not in mine and "Your suites." in mine
    team = page.get("/suites/?scope=team").content.decode()
    assert own.name in team and theirs.name in team and elsewhere.name not in team
    assert "The suites of Evals, by every member" in team and "owner's" in team
    listed = api(client, "get", "/api/v1/suites?scope=team", ApiToken.issue(colleague)).json()["suites"]
    assert {row["name"] for row in listed} == {own.name, theirs.name}


def test_the_run_list_shows_mine_or_my_teams(client, owner, colleague, stranger, catalogue):
    theirs = start_run(owner, suite=suite(owner, name="Owner suite"), contestants=catalogue[:2])
    own = start_run(colleague, suite=suite(colleague, name="Member suite"), contestants=catalogue[:2])
    elsewhere = start_run(stranger, suite=suite(stranger, name="Elsewhere suite"), contestants=catalogue[:2])
    page = as_user(client, colleague)
    mine = page.get("/suite-runs/").content.decode()
    assert str(own.id) in mine and str(theirs.id) not in mine and "Your runs." in mine
    team = page.get("/suite-runs/?scope=team").content.decode()
    assert str(own.id) in team and str(theirs.id) in team and str(elsewhere.id) not in team
    assert "The runs of Evals, by every member" in team and "owner's" in team
    listed = api(client, "get", "/api/v1/suite-runs?scope=team", ApiToken.issue(colleague)).json()["suite_runs"]
    assert {row["id"] for row in listed} == {str(own.id), str(theirs.id)}
    assert {row["owner"] for row in listed} == {"owner", "colleague"}


def test_a_user_in_no_team_sees_only_theirs(client, outsider, owner, team):
    suite(owner, name="Owner suite")
    suite(outsider, name="Outsider suite")
    html = as_user(client, outsider).get("/suites/?scope=team").content.decode()
    assert "Outsider suite" in html and "Owner suite" not in html and "My team's" not in html
    token = ApiToken.issue(outsider)
    for path in ("/api/v1/suites", "/api/v1/suite-runs", "/api/v1/export/battles", "/api/v1/leaderboard"):
        refused = api(client, "get", path + "?scope=team", token)  # one rule: a script hears it has no team
        assert refused.status_code == 400 and refused.json()["error"]["fields"] == {"scope": NO_TEAM}, path
    assert api(client, "get", "/api/v1/suites", token).json()["suites"][0]["name"] == "Outsider suite"
    response = api(client, "get", "/api/v1/suites?scope=everyone", token)
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_request"
    assert "everyone" in response.json()["error"]["fields"]["scope"]


# --- suite runs -----------------------------------------------------------------------------
def test_a_member_opens_a_colleagues_run_matrix_comparison_and_exports_read_only(client, owner, colleague, catalogue):
    s = suite(owner, "Capital of France?", tag="geo")
    earlier, run = judged_run(owner, catalogue[:3], s), judged_run(owner, catalogue[:3], s)
    page = as_user(client, colleague)
    html = page.get(f"/suite-runs/{run.id}/").content.decode()
    assert READ_ONLY in html
    for control in (f"/suite-runs/{run.id}/cancel", f"/suite-runs/{run.id}/recheck", f"/suite-runs/{run.id}/judge"):
        assert control not in html, control
    for path in (f"/suite-runs/{run.id}/matrix", f"/suite-runs/{run.id}/compare/",
                 f"/suite-runs/{run.id}/compare/{earlier.id}/"):
        response = page.get(path)
        assert response.status_code == 200 and READ_ONLY in response.content.decode(), path
    assert f"/suite-runs/{run.id}/compare/{earlier.id}/" in page.get(f"/suite-runs/{run.id}/compare/").content.decode()
    for path in ("export.csv", "export.json", "export.jsonl", "progress"):
        assert page.get(f"/suite-runs/{run.id}/{path}").status_code == 200, path
    token = ApiToken.issue(colleague)
    for path in ("", "/answers", f"/compare/{earlier.id}"):
        assert api(client, "get", f"/api/v1/suite-runs/{run.id}{path}", token).status_code == 200, path


def test_the_owner_keeps_the_runs_controls(client, owner, colleague, catalogue):
    run = judged_run(owner, catalogue[:3])
    html = as_user(client, owner).get(f"/suite-runs/{run.id}/").content.decode()
    assert "Read-only" not in html
    assert f"/suite-runs/{run.id}/recheck" in html and f"/suite-runs/{run.id}/judge" in html


def test_a_members_writes_to_a_colleagues_run_are_refused(client, owner, colleague, catalogue):
    run = judged_run(owner, catalogue[:3])
    page = as_user(client, colleague)
    for path in ("cancel", "recheck", "judge"):
        assert page.post(f"/suite-runs/{run.id}/{path}", {"choice": "a"}).status_code == 403, path
    assert page.get(f"/suite-runs/{run.id}/judge").status_code == 403  # judging is a write, its page too
    token = ApiToken.issue(colleague)
    for path in ("cancel", "recheck"):
        response = api(client, "post", f"/api/v1/suite-runs/{run.id}/{path}", token)
        assert response.status_code == 403 and response.json()["error"]["code"] == "read_only", path
    s = Suite.objects.get(id=run.suite_id)
    response = api(client, "post", "/api/v1/suite-runs", token,
                   {"suite": str(s.id), "contestants": [m.slug for m in catalogue[:2]]})
    assert response.status_code == 403 and response.json()["error"]["code"] == "read_only"


@pytest.mark.parametrize("who", ["stranger", "outsider"])
def test_anyone_outside_the_team_gets_404_for_a_run(client, owner, team, stranger, outsider, catalogue, who):
    run = judged_run(owner, catalogue[:3])
    other = {"stranger": stranger, "outsider": outsider}[who]
    page = as_user(client, other)
    for path in ("", "matrix", "compare/", "export.csv", "judge"):
        assert page.get(f"/suite-runs/{run.id}/{path}").status_code == 404, path
    response = api(client, "get", f"/api/v1/suite-runs/{run.id}", ApiToken.issue(other))
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


def test_a_member_sees_the_owners_people_verdicts_only_once_revealed(client, owner, colleague, catalogue):
    left, right = catalogue[:2]
    run = start_run(owner, suite=suite(owner, "Capital of France?"), contestants=[left, right])
    run_to_end(run)
    run.refresh_from_db()
    pair = run.next_pair_for(owner)
    record_human_verdict(run, owner, pair.left.id, pair.right.id, Battle.Outcome.LEFT)
    token = ApiToken.issue(colleague)
    url = f"/api/v1/suite-runs/{run.id}"
    assert api(client, "get", url, token).json()["decision"] is None  # blind: nothing tells who won
    html = as_user(client, colleague).get(f"/suite-runs/{run.id}/").content.decode()
    assert '<div id="suite-run-decision" hidden' in html
    reveal_for(run, owner)
    assert api(client, "get", url, token).json()["decision"] is not None
