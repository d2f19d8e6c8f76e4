"""The staff catalogue API: an endpoint's key is written ("api_key", stored encrypted) and never read
back; an openai entry being enabled is checked first and stays disabled with "check_error" when
the check fails; labels are read and written. Against a real local HTTP server."""

import pytest
from django.core.management import call_command
from django.db import connection

from arena.catalogue import checks
from arena.catalogue.models import ModelEntry
from arena.generations.models import Generation
from tests.arena.api_client import api
from tests.arena.catalogue.models_endpoint import KEY, ModelsEndpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_token(capsys):
    call_command("arena_token", "ops", "--staff", "--create-service-account")
    return capsys.readouterr().out.strip()


@pytest.fixture
def endpoint():
    with ModelsEndpoint() as server:
        yield server


def entry_body(endpoint, **fields):
    return {"slug": "team", "name": "Team model", "engine": "openai", "base_url": endpoint.url(),
            "remote_model": "team/model-a", **fields}


def raw_rows() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM catalogue_modelentry")
        return repr(cursor.fetchall())


def test_a_key_is_written_never_read_and_the_entry_enabled_once_checked(client, staff_token, endpoint):
    created = api(client, "post", "/api/v1/catalogue", staff_token, entry_body(endpoint, api_key=KEY))
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["enabled"] and body["api_key_stored"] and body["check_error"] == "" and body["checked_at"]
    assert "api_key" not in body and KEY not in created.content.decode()
    assert endpoint.seen == [("/good/v1/models", f"Bearer {KEY}")]
    assert "notices" not in body  # the key stays where it was given for
    for path in ("/api/v1/catalogue", "/api/v1/catalogue/team"):
        assert KEY not in api(client, "get", path, staff_token).content.decode()
    assert KEY not in raw_rows()

    # Removing the key: checked again (what the check covers changed), the endpoint refuses, disabled.
    removed = api(client, "patch", "/api/v1/catalogue/team", staff_token, {"api_key": None})
    assert removed.status_code == 200
    assert not removed.json()["api_key_stored"] and not removed.json()["enabled"]
    assert removed.json()["check_error"] == checks.NOT_OPENAI.format(url=f"{endpoint.url()}/models")
    again = api(client, "patch", "/api/v1/catalogue/team", staff_token, {"api_key": KEY, "enabled": True})
    assert again.json()["enabled"] and again.json()["api_key_stored"]


@pytest.mark.parametrize(("fields", "reason"), [
    ({"api_key_env": "ARENA_ENDPOINT_KEY_NOT_SET"},
     "The environment variable ARENA_ENDPOINT_KEY_NOT_SET is not set in this app's environment"),
    ({"api_key": KEY, "base_url": "http://127.0.0.1:9/v1"}, "The endpoint is not reachable: GET http://127.0.0.1:9/v1"),
    ({"api_key": KEY, "remote_model": "team/model-z"}, "The endpoint does not list the model 'team/model-z'"),
])
def test_an_entry_that_fails_its_check_stays_disabled_with_the_reason(client, staff_token, endpoint, fields,
                                                                     reason, monkeypatch):
    monkeypatch.delenv("ARENA_ENDPOINT_KEY_NOT_SET", raising=False)
    created = api(client, "post", "/api/v1/catalogue", staff_token, entry_body(endpoint, **fields))
    assert created.status_code == 201, created.content
    assert not created.json()["enabled"] and created.json()["check_error"].startswith(reason)
    assert not ModelEntry.objects.enabled().filter(slug="team").exists()
    listed = api(client, "get", "/api/v1/catalogue", staff_token).json()["entries"]
    assert [e["check_error"] for e in listed if e["slug"] == "team"] == [created.json()["check_error"]]


def test_testing_an_endpoint_checks_it_first(client, staff_token, endpoint):
    ModelEntry.objects.create(slug="team", name="Team model", engine="openai", base_url="http://127.0.0.1:9/v1",
                              remote_model="team/model-a")
    response = api(client, "post", "/api/v1/catalogue/team/test", staff_token)
    assert response.status_code == 200
    result = response.json()
    assert result["status"] == "check failed" and not result["ok"]
    assert result["error"].startswith("The endpoint is not reachable: GET http://127.0.0.1:9/v1/models")
    assert ModelEntry.objects.get(slug="team").check_error == result["error"]
    assert not Generation.objects.exists()


def test_a_key_only_for_an_openai_entry_and_labels_are_read_and_written(client, staff_token, catalogue):
    refused = api(client, "patch", f"/api/v1/catalogue/{catalogue[0].slug}", staff_token, {"api_key": KEY})
    assert refused.status_code == 400 and "Only an openai entry has an API key" in refused.json()["error"]["fields"][
        "api_key"]
    assert KEY not in refused.content.decode()

    read = api(client, "get", f"/api/v1/catalogue/{catalogue[0].slug}", staff_token)
    assert read.json()["label"] == catalogue[0].label
    changed = api(client, "patch", f"/api/v1/catalogue/{catalogue[0].slug}", staff_token, {"label": "Our SmolLM2"})
    assert changed.status_code == 200 and changed.json()["label"] == "Our SmolLM2"
    taken = api(client, "patch", f"/api/v1/catalogue/{catalogue[1].slug}", staff_token, {"label": "our smollm2"})
    assert taken.status_code == 400 and "Another entry has this label" in taken.json()["error"]["fields"]["label"]
