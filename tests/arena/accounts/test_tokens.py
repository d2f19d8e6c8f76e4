"""API tokens: names, expiry and revocation; the page and /api/v1/tokens; `arena_token`."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from arena.accounts.models import ApiToken
from tests.arena.api_client import api

pytestmark = pytest.mark.django_db


def test_a_token_is_refused_once_revoked_or_expired(client, owner):
    token, record = ApiToken.create(owner, name="ci", expires_in_days=30)
    assert ApiToken.objects.user_for(token) == owner
    assert record.expires_at - timezone.now() > timedelta(days=29, hours=23)
    record.refresh_from_db()
    assert record.last_used_at is not None
    ApiToken.objects.filter(id=record.id).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert ApiToken.objects.user_for(token) is None
    assert api(client, "get", "/api/v1/models", token).status_code == 401
    other = ApiToken.issue(owner)
    assert api(client, "get", "/api/v1/models", other).status_code == 200
    assert ApiToken.objects.get(hint=other[:12]).revoke() is True
    assert api(client, "get", "/api/v1/models", other).status_code == 401
    assert api(client, "get", "/v1/models", other).status_code == 401  # the OpenAI-compatible API too
    owner.is_active = False
    owner.save()
    assert ApiToken.objects.user_for(ApiToken.issue(owner)) is None


def test_the_api_lists_makes_and_revokes_tokens(client, owner, token):
    made = api(client, "post", "/api/v1/tokens", token, {"name": "  nightly job  ", "expires_in_days": 7})
    assert made.status_code == 201 and made["Cache-Control"] == "no-store"
    body = made.json()
    assert body["name"] == "nightly job" and body["state"] == "active" and body["token"].startswith("arena_")
    assert body["expires_at"] is not None and made["Location"] == f"/api/v1/tokens/{body['id']}"
    assert api(client, "get", "/api/v1/models", body["token"]).status_code == 200

    listed = api(client, "get", "/api/v1/tokens", token).json()["tokens"]
    assert listed[0]["id"] == body["id"] and len(listed) == 2
    assert all("token" not in t and "digest" not in t for t in listed)  # no secret is ever listed again
    assert body["token"] not in api(client, "get", "/api/v1/tokens", token).content.decode()

    assert api(client, "delete", f"/api/v1/tokens/{body['id']}", token).status_code == 204
    assert api(client, "get", "/api/v1/models", body["token"]).status_code == 401  # at once
    assert api(client, "delete", f"/api/v1/tokens/{body['id']}", token).status_code == 204  # again: no change
    states = {t["id"]: t["state"] for t in api(client, "get", "/api/v1/tokens", token).json()["tokens"]}
    assert states[body["id"]] == "revoked"
    assert api(client, "delete", "/api/v1/tokens/999999999", token).status_code == 404
    assert api(client, "delete", f"/api/v1/tokens/{2**70}", token).status_code == 404
    never = api(client, "post", "/api/v1/tokens", token, {}).json()
    assert never["expires_at"] is None and never["name"] == ""


@pytest.mark.parametrize("body", [
    {"expires_in_days": 0}, {"expires_in_days": -1}, {"expires_in_days": 3651}, {"expires_in_days": True},
    {"expires_in_days": "7"}, {"expires_in_days": 1.5}, {"name": 7}, {"name": "x" * 101}, {"scope": "all"},
])
def test_the_api_refuses_a_bad_token_request(client, token, body):
    response = api(client, "post", "/api/v1/tokens", token, body)
    assert response.status_code == 400 and response.json()["error"]["message"]
    assert ApiToken.objects.count() == 1


def test_a_token_may_revoke_itself(client, owner):
    token, record = ApiToken.create(owner)
    assert api(client, "delete", f"/api/v1/tokens/{record.id}", token).status_code == 204
    assert api(client, "get", "/api/v1/tokens", token).status_code == 401


def test_the_page_shows_a_new_token_once_and_revokes(client, owner):
    client.force_login(owner)
    page = client.get("/account/tokens/")
    assert page.status_code == 200 and "No tokens yet." in page.content.decode()
    made = client.post("/account/tokens/", {"name": "laptop", "expires_in_days": "30"})
    html = made.content.decode()
    record = ApiToken.objects.get(user=owner)
    assert made.status_code == 200 and "no-store" in made["Cache-Control"]
    token = next(part for part in html.split('"') if part.startswith("arena_") and len(part) > 40)
    assert ApiToken.objects.user_for(token) == owner and record.name == "laptop" and record.expires_at
    again = client.get("/account/tokens/").content.decode()
    assert token not in again and "laptop" in again and record.hint in again
    bad = client.post("/account/tokens/", {"name": "x", "expires_in_days": "0"})
    assert bad.status_code == 400 and ApiToken.objects.count() == 1
    response = client.post(f"/account/tokens/{record.id}/revoke")
    assert response.status_code == 302 and response["Location"] == "/account/tokens/"
    assert ApiToken.objects.user_for(token) is None
    assert 'data-state="revoked"' in client.get("/account/tokens/").content.decode()


def test_the_page_is_csrf_protected(owner):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)
    assert browser.post("/account/tokens/", {"name": "x"}).status_code == 403
    assert not ApiToken.objects.exists()


def test_arena_token_still_prints_a_working_token(client, db):
    out = StringIO()
    call_command("arena_token", "scripted", "--create-service-account", stdout=out)
    token = out.getvalue().strip()
    assert api(client, "get", "/api/v1/models", token).status_code == 200
    record = ApiToken.objects.get()
    assert record.expires_at is None and record.revoked_at is None
