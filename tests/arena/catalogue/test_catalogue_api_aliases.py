"""The staff catalogue API reads, creates and changes an entry's aliases, and refuses bad ones
with a 400 naming the field, like every other field."""

import pytest
from django.core.management import call_command

from arena.catalogue.defaults import GEMMA_ALIASES
from arena.catalogue.models import ModelEntry
from tests.arena.api_client import api

pytestmark = pytest.mark.django_db

ENDPOINT = {"slug": "hosted", "name": "Hosted model", "engine": "openai", "base_url": "https://api.example.com/v1",
            "remote_model": "gpt-x", "enabled": False}  # enabled, it would be checked first


@pytest.fixture
def staff_token(capsys):
    call_command("arena_token", "ops", "--staff", "--create-service-account")
    return capsys.readouterr().out.strip()


def test_aliases_are_read_created_and_changed(client, catalogue, staff_token):
    assert api(client, "get", "/api/v1/catalogue/gemma-3-270m", staff_token).json()["aliases"] == GEMMA_ALIASES
    created = api(client, "post", "/api/v1/catalogue", staff_token, {**ENDPOINT, "aliases": [" OpenAI ", "GPT"]})
    assert created.status_code == 201, created.content
    assert created.json()["aliases"] == ["OpenAI", "GPT"]  # trimmed
    changed = api(client, "patch", "/api/v1/catalogue/hosted", staff_token, {"aliases": ["OpenAI", "ChatGPT"]})
    assert changed.status_code == 200 and changed.json()["aliases"] == ["OpenAI", "ChatGPT"]
    kept = api(client, "patch", "/api/v1/catalogue/hosted", staff_token, {"enabled": False})
    assert kept.json()["aliases"] == ["OpenAI", "ChatGPT"]  # not sent: kept
    cleared = api(client, "patch", "/api/v1/catalogue/hosted", staff_token, {"aliases": []})
    assert cleared.status_code == 200 and ModelEntry.objects.get(slug="hosted").aliases == []


def test_a_new_entry_without_aliases_has_none(client, staff_token):
    assert api(client, "post", "/api/v1/catalogue", staff_token, ENDPOINT).json()["aliases"] == []


@pytest.mark.parametrize(("aliases", "words"), [
    ("OpenAI", "must be a list of strings"),
    (["OpenAI", 4], "must be a list of strings"),
    ({"name": "OpenAI"}, "must be a list of strings"),
    (["OpenAI", ""], "cannot be empty"),
    (["O"], "too short"),
    (["OpenAI, GPT"], "without commas"),
    ([f"Alias{i}" for i in range(31)], "At most 30 aliases"),
])
def test_bad_aliases_are_a_400_naming_the_field(client, catalogue, staff_token, aliases, words):
    response = api(client, "patch", "/api/v1/catalogue/gemma-3-270m", staff_token, {"aliases": aliases})
    assert response.status_code == 400, response.content
    assert words in response.json()["error"]["fields"]["aliases"]
    assert ModelEntry.objects.get(slug="gemma-3-270m").aliases == GEMMA_ALIASES


def test_the_openapi_description_has_aliases(client):
    schema = client.get("/api/v1/openapi.json").json()
    body = schema["paths"]["/api/v1/catalogue/{slug}"]["patch"]["requestBody"]["content"]["application/json"]
    text = str(body) + str(schema.get("components", {}))
    assert "aliases" in text and "maxItems" in text
