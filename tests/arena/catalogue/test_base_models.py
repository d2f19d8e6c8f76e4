"""What "base" means, said where an entry is picked and read: the pickers' labels, the catalogue
API (the prompt form; staff set whether a base model enters chat draws), the admin's help."""

import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from arena.catalogue.models import BASE_MARK, PROMPT_FORM_CHAT, PROMPT_FORM_TEXT, ModelEntry
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_token(capsys):
    call_command("arena_token", "ops", "--staff", "--create-service-account")
    return capsys.readouterr().out.strip()


def test_a_base_models_label_in_pickers_says_it_continues_text():
    assert ModelEntry(name="Gemma 3 270M (base)", base=True).picker_label == "Gemma 3 270M (base: continues text)"
    assert ModelEntry(name="Pythia 70M", base=True).picker_label == f"Pythia 70M {BASE_MARK}"
    assert (ModelEntry(name="Gemma 3 270M (base), llama.cpp Q4_K_M", base=True).picker_label
            == "Gemma 3 270M, llama.cpp Q4_K_M (base: continues text)")  # what tells variants apart first
    assert ModelEntry(name="SmolLM2 135M Instruct").picker_label == "SmolLM2 135M Instruct"


@pytest.mark.parametrize("url", ["playground", "compare", "tournament-new"])
def test_the_pickers_mark_base_models(client, owner, catalogue, url):
    client.force_login(owner)
    html = client.get(reverse(url)).content.decode()
    assert '<option value="gemma-3-270m">Gemma 3 270M (base: continues text)</option>' in html
    assert ">SmolLM2 135M Instruct</option>" in html


def test_the_api_says_each_models_prompt_form_and_staff_let_a_base_model_into_chat_draws(
        client, token, staff_token, catalogue):
    listed = api(client, "get", "/api/v1/models", token)
    assert_conforms(listed.json(), "/api/v1/models", "get")
    forms = {m["slug"]: m["prompt_form"] for m in listed.json()["models"]}
    assert forms["gemma-3-270m"] == PROMPT_FORM_TEXT and forms["smollm2-135m"] == PROMPT_FORM_CHAT
    changed = api(client, "patch", "/api/v1/catalogue/gemma-3-270m", staff_token, {"in_chat_draws": True})
    assert changed.status_code == 200, changed.content
    assert changed.json()["in_chat_draws"] is True and ModelEntry.objects.get(slug="gemma-3-270m").in_chat_draws
    refused = api(client, "patch", "/api/v1/catalogue/gemma-3-270m", staff_token, {"in_chat_draws": "yes"})
    assert refused.status_code == 400


def test_the_admin_explains_base_and_chat_draws(admin_client, catalogue):
    html = admin_client.get(reverse("admin:catalogue_modelentry_change", args=[catalogue[3].id])).content.decode()
    assert "so it continues a question (often by repeating it) rather than answering it" in html
    assert 'name="in_chat_draws"' in html


def test_the_new_tournament_form_preselects_chat_models_before_base_models(client, owner, catalogue):
    client.force_login(owner)
    html = client.get(reverse("tournament-new")).content.decode()
    selected = re.findall(r'<option value="([^"]+)" selected>', html)
    assert len(selected) == 4 and not ModelEntry.objects.filter(slug__in=selected, base=True).exists(), selected
