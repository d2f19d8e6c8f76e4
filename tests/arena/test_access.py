"""Who may read or change what, for every object type, asked by its owner, another user and
an anonymous client, by page and by API (the sockets: tests/arena/test_security.py), and what
a read-only share link does and does not allow; staff-only pages and endpoints. Objects are
finished by hand: no model runs."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from arena.accounts.models import ApiToken
from arena.battles.models import Battle
from arena.generations.models import Generation
from arena.history.models import NEW_LINKS, ShareLink
from arena.suite_runs.actions import start_run
from arena.suite_runs.models import SuiteRun
from arena.suites.models import Suite
from arena.tournaments.actions import start_tournament
from arena.tournaments.models import Tournament
from tests.arena.api_client import api
from tests.arena.factories import generation, suite

pytestmark = pytest.mark.django_db


@pytest.fixture
def things(owner, catalogue):
    battle = Battle.objects.create(owner=owner, left=generation(owner, catalogue[0], text="Blue."),
                                   right=generation(owner, catalogue[3], text="Blue."))
    tournament = start_tournament(owner, contestants=catalogue[:4], prompt="Name a colour.", seeding="given")
    run = start_run(owner, suite=suite(owner, "Name a colour."), contestants=catalogue[:2])
    return {"generation": generation(owner, catalogue[0], text="Blue."), "comparison": battle, "tournament": tournament,
            "suite": suite(owner, "Name a colour."), "suite_run": run}


@pytest.fixture
def clients(owner, outsider):
    mine, theirs = Client(), Client()
    mine.force_login(owner)
    theirs.force_login(outsider)
    return {"owner": mine, "outsider": theirs, "anonymous": Client()}


@pytest.fixture
def tokens(owner, outsider):
    return {"owner": ApiToken.issue(owner), "outsider": ApiToken.issue(outsider), "anonymous": None}


def pages(things) -> dict[str, str]:
    run = things["suite_run"].id
    return {**{kind: obj.get_absolute_url() for kind, obj in things.items()},
            **{f"suite_run {page}": f"/suite-runs/{run}/{page}"
               for page in ("progress", "judge", "export.csv", "export.json", "export.jsonl", "compare/")}}


def api_urls(things) -> dict[str, str]:
    return {"generation": f"/api/v1/generations/{things['generation'].id}",
            "comparison": f"/api/v1/comparisons/{things['comparison'].id}",
            "tournament": f"/api/v1/tournaments/{things['tournament'].id}",
            "suite": f"/api/v1/suites/{things['suite'].id}",
            "suite_run": f"/api/v1/suite-runs/{things['suite_run'].id}"}


EXPECTED_PAGE = {"owner": 200, "outsider": 404, "anonymous": 302}
EXPECTED_API = {"owner": 200, "outsider": 404, "anonymous": 401}


@pytest.mark.parametrize("who", ["owner", "outsider", "anonymous"])
def test_reading_each_object_by_page_and_by_api(things, clients, tokens, who, client):
    for kind, url in pages(things).items():
        response = clients[who].get(url)
        assert response.status_code == EXPECTED_PAGE[who], (kind, who)
        if who == "anonymous":
            assert response["Location"].startswith("/accounts/login/"), kind
        if who == "outsider":
            assert "Name a colour." not in response.content.decode(), kind
    for kind, url in api_urls(things).items():
        response = api(client, "get", url, tokens[who])
        assert response.status_code == EXPECTED_API[who], (kind, who)
        if who != "owner":
            assert "Name a colour." not in response.content.decode() and "error" in response.json(), kind


def state(things) -> tuple:
    """Everything an action could change, to check a refused one changed nothing."""
    battle = Battle.objects.get(id=things["comparison"].id)
    tournament = Tournament.objects.get(id=things["tournament"].id)
    matches = tuple(tournament.matches.values_list("winner_id", "battle_id").order_by("number"))
    return (battle.outcome, Battle.objects.count(), Generation.objects.count(), tournament.state, matches,
            ShareLink.objects.count(), Suite.objects.count(), SuiteRun.objects.get(id=things["suite_run"].id).state,
            SuiteRun.objects.count())


def actions(things) -> list[tuple[str, dict]]:
    b, t = things["comparison"], things["tournament"]
    match = t.current_match()
    return [
        (f"/b/{b.id}/vote", {"outcome": "left"}),
        (f"/b/{b.id}/rerun", {}),
        (f"/b/{b.id}/swap", {}),
        (f"/b/{b.id}/continue", {"prompt": "And another?"}),
        (f"/tournaments/{t.id}/winner", {"match": match.id, "winner": "left"}),
        (f"/tournaments/{t.id}/rerun", {"match": match.id}),
        (f"/tournaments/{t.id}/stop", {}),
        (f"/tournaments/{t.id}/resume", {}),
        (f"/tournaments/{t.id}/replay", {"prompt": "Another prompt"}),
        (f"/history/share/generation/{things['generation'].id}", {}),
        (f"/history/share/battle/{b.id}", {}),
        (f"/history/share/tournament/{t.id}", {}),
        (f"/history/share/suite/{things['suite'].id}", {}),
        (f"/history/share/suite_run/{things['suite_run'].id}", {}),
        (f"/suites/{things['suite'].id}/delete", {}),
        (f"/suite-runs/{things['suite_run'].id}/cancel", {}),
        (f"/suite-runs/{things['suite_run'].id}/judge", {"finish": "1"}),
    ]


@pytest.mark.parametrize("who", ["outsider", "anonymous"])
def test_nobody_but_the_owner_changes_anything_by_page(things, clients, who):
    before = state(things)
    for url, data in actions(things):
        response = clients[who].post(url, data)
        assert response.status_code in ((404,) if who == "outsider" else (302,)), (url, response.status_code)
        if who == "anonymous":
            assert response["Location"].startswith("/accounts/login/"), url
    assert state(things) == before


def test_the_owner_may_act(things, clients):
    before = state(things)
    assert clients["owner"].post(f"/b/{things['comparison'].id}/vote", {"outcome": "left"}).status_code in (200, 302)
    assert clients["owner"].post(f"/history/share/generation/{things['generation'].id}").status_code in (200, 302)
    assert state(things) != before


@pytest.mark.parametrize("who", ["outsider", "anonymous"])
def test_nobody_but_the_owner_changes_anything_by_api(things, tokens, who, client):
    before = state(things)
    b, t = things["comparison"], things["tournament"]
    match = t.current_match()
    for url, body in [(f"/api/v1/comparisons/{b.id}/vote", {"outcome": "left"}),
                      (f"/api/v1/tournaments/{t.id}/winner", {"match": match.id, "winner": "left"}),
                      (f"/api/v1/tournaments/{t.id}/rerun", {"match": match.id}),
                      (f"/api/v1/suites/{things['suite'].id}", None),
                      (f"/api/v1/suite-runs/{things['suite_run'].id}/cancel", None),
                      ("/api/v1/suite-runs", {"suite": str(things["suite"].id),
                                              "contestants": ["smollm2-135m", "gemma-3-270m"]})]:
        response = api(client, "delete" if url.startswith("/api/v1/suites/") else "post", url, tokens[who], body)
        assert response.status_code == (404 if who == "outsider" else 401), (url, response.status_code)
    assert state(things) == before


def test_exports_and_history_hold_only_the_askers_own(things, clients, tokens, client, outsider, catalogue):
    generation(outsider, catalogue[0], "Name a fruit.", text="the outsider's own answer")
    for url in ("/history/", "/history/comparisons/", "/history/tournaments/", "/history/export/generations.json",
                "/history/export/battles.csv", "/suites/", "/suite-runs/"):
        response = clients["outsider"].get(url)
        body = (response.getvalue() if response.streaming else response.content).decode()
        assert "Name a colour." not in body, url
    exported = api(client, "get", "/api/v1/export/generations?format=json", tokens["outsider"]).getvalue().decode()
    assert "the outsider's own answer" in exported and "Name a colour." not in exported
    assert api(client, "get", "/api/v1/export/battles", None).status_code == 401
    assert api(client, "get", "/api/v1/suites", tokens["outsider"]).json() == {"suites": []}
    assert clients["anonymous"].get("/suites/")["Location"].startswith("/accounts/login/")
    assert api(client, "get", "/api/v1/suites", None).status_code == 401
    assert api(client, "post", "/api/v1/suites", None, {"name": "S", "prompts": [{"prompt": "Hi"}]}).status_code == 401
    assert api(client, "get", "/api/v1/suite-runs", tokens["outsider"]).json() == {"suite_runs": []}
    assert api(client, "get", "/api/v1/suite-runs", None).status_code == 401


def test_a_share_link_opens_read_only_for_anyone_until_revoked(things, clients, owner):
    link = ShareLink.share(owner, things["comparison"])
    url = f"/s/{link.token}/"
    for who in ("owner", "outsider", "anonymous"):
        page = clients[who].get(url)
        html = page.content.decode()
        assert page.status_code == 200 and "Name a colour." in html, who
        assert "<form" not in html and "ws-connect" not in html and "csrfmiddlewaretoken" not in html, who
    # The link reads; it does not open the permalink, its actions or its socket to anyone else.
    assert clients["outsider"].get(things["comparison"].get_absolute_url()).status_code == 404
    assert clients["outsider"].post(f"/b/{things['comparison'].id}/vote", {"outcome": "left"}).status_code == 404
    assert clients["outsider"].post(f"/history/shared/{link.id}/revoke").status_code == 404
    assert ShareLink.objects.get(id=link.id).revoked_at is None
    assert clients["owner"].post(f"/history/shared/{link.id}/revoke").status_code in (200, 302)
    for who in ("owner", "outsider", "anonymous"):
        assert clients[who].get(url).status_code == 404, who


def test_a_suites_share_link_reads_and_opens_nothing_else(things, clients, owner):
    link = ShareLink.share(owner, things["suite"])
    for who in ("owner", "outsider", "anonymous"):
        html = clients[who].get(f"/s/{link.token}/").content.decode()
        assert "Name a colour." in html and "<form" not in html and "csrfmiddlewaretoken" not in html, who
    assert clients["outsider"].get(things["suite"].get_absolute_url()).status_code == 404
    assert clients["outsider"].post(f"/suites/{things['suite'].id}/delete").status_code == 404
    assert Suite.objects.filter(id=things["suite"].id).exists()


def test_a_suite_runs_share_link_reads_and_opens_nothing_else(things, clients, owner):
    run = things["suite_run"]
    assert clients["owner"].post(f"/history/share/suite_run/{run.id}").status_code in (200, 302)
    link = ShareLink.objects.active().get(suite_run=run)
    token = clients["owner"].session[NEW_LINKS][str(link.id)]  # shown once on the owner's page; only a digest is kept
    for who in ("owner", "outsider", "anonymous"):
        html = clients[who].get(f"/s/{token}/").content.decode()
        assert "Run of Capitals" in html and 'id="suite-run-progress"' in html, who
        assert "<form" not in html and "csrfmiddlewaretoken" not in html and "hx-get" not in html, who
    assert clients["outsider"].get(run.get_absolute_url()).status_code == 404


def test_nobody_runs_another_users_suite(things, clients):
    response = clients["outsider"].post("/suite-runs/new/", {"suite": things["suite"].id, "format": "round_robin",
                                                             "contestant_1": "smollm2-135m",
                                                             "contestant_2": "smollm2-135m-spec"})
    assert response.status_code == 400 and SuiteRun.objects.count() == 1
    assert str(things["suite_run"].id) not in clients["outsider"].get("/suite-runs/").content.decode()
    assert clients["anonymous"].get("/suite-runs/new/")["Location"].startswith("/accounts/login/")


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_superuser("boss", password="boss-pass-123")


def test_staff_only_admin_catalogue_and_worker_status(clients, staff, tokens, client):
    boss = Client()
    boss.force_login(staff)
    for url in ("/admin/", "/admin/catalogue/modelentry/", "/status/"):
        assert boss.get(url).status_code == 200, url
        for who in ("owner", "anonymous"):
            response = clients[who].get(url)
            assert response.status_code == 302 and "login" in response["Location"], (url, who)
    assert api(client, "get", "/api/v1/workers", ApiToken.issue(staff)).status_code == 200
    assert api(client, "get", "/api/v1/workers", tokens["owner"]).status_code == 403
    assert api(client, "get", "/api/v1/workers", None).status_code == 401


def test_api_tokens_are_listed_made_and_revoked_by_their_owner_alone(clients, tokens, client, owner, outsider):
    """The token page and /api/v1/tokens: each user sees and revokes only their own tokens."""
    mine = ApiToken.objects.get(user=owner)
    theirs = ApiToken.objects.get(user=outsider)
    assert clients["owner"].get("/account/tokens/").status_code == 200
    assert clients["anonymous"].get("/account/tokens/")["Location"].startswith("/accounts/login/")
    assert clients["anonymous"].post(f"/account/tokens/{mine.id}/revoke")["Location"].startswith("/accounts/login/")
    assert clients["outsider"].post(f"/account/tokens/{mine.id}/revoke").status_code == 404
    assert mine.hint not in clients["outsider"].get("/account/tokens/").content.decode()
    listed = api(client, "get", "/api/v1/tokens", tokens["outsider"]).json()["tokens"]
    assert [t["id"] for t in listed] == [theirs.id]
    assert api(client, "delete", f"/api/v1/tokens/{mine.id}", tokens["outsider"]).status_code == 404
    for method, url in (("get", "/api/v1/tokens"), ("post", "/api/v1/tokens"), ("delete", f"/api/v1/tokens/{mine.id}")):
        assert api(client, method, url, None, {} if method == "post" else None).status_code == 401, (method, url)
    mine.refresh_from_db()
    assert mine.revoked_at is None and api(client, "get", "/api/v1/models", tokens["owner"]).status_code == 200
    # The owner revokes it: refused at once.
    assert api(client, "delete", f"/api/v1/tokens/{mine.id}", tokens["owner"]).status_code == 204
    assert api(client, "get", "/api/v1/models", tokens["owner"]).status_code == 401
    assert api(client, "get", "/api/v1/models", tokens["outsider"]).status_code == 200


def test_a_deactivated_owners_share_links_open_nothing(things, clients, owner):
    link = ShareLink.share(owner, things["generation"])
    url = f"/s/{link.token}/"
    assert clients["anonymous"].get(url).status_code == 200
    owner.is_active = False
    owner.save(update_fields=["is_active"])
    for who in ("outsider", "anonymous"):
        response = clients[who].get(url)
        assert response.status_code == 404 and "Blue." not in response.content.decode(), who
    owner.is_active = True
    owner.save(update_fields=["is_active"])
    assert clients["anonymous"].get(url).status_code == 200  # the link itself was never revoked
