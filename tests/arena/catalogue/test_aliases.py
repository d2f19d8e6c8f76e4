"""A catalogue entry's aliases (the words that name it in an answer): validated like every
field, edited in the admin as one comma-separated line, and given to the packaged entries
already in a database by migration 0003."""

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from arena.catalogue.defaults import DEFAULT_ENTRIES, GEMMA_ALIASES, SMOLLM2_ALIASES
from arena.catalogue.models import MAX_ALIASES, ModelEntry

ENDPOINT = {"slug": "hosted", "name": "Hosted", "engine": "openai", "base_url": "https://api.example.com/v1",
            "remote_model": "gpt-x"}
ADMIN_ENDPOINT = {**ENDPOINT, "kind": "full", "precision": "auto", "memory_estimate_mb": 0, "max_concurrency": 0,
                  "default_params": "{}", "context_length": 0, "enabled": "on"}


def test_the_default_catalogue_names_each_family():
    for entry in DEFAULT_ENTRIES:
        family = GEMMA_ALIASES if "gemma" in entry["slug"] else SMOLLM2_ALIASES
        assert entry["aliases"] == family, entry["slug"]


def test_aliases_are_trimmed_and_deduplicated(db):
    entry = ModelEntry(**ENDPOINT, aliases=["  Open  AI ", "GPT", "open ai", "ChatGPT"])
    entry.full_clean()
    assert entry.aliases == ["Open AI", "GPT", "ChatGPT"]


@pytest.mark.parametrize(("aliases", "words"), [
    (["Gemma", ""], "cannot be empty"),
    (["  "], "cannot be empty"),
    (["G"], "too short"),
    (["--"], "too short"),
    (["Google, DeepMind"], "without commas"),
    (["x" * 61], "at most 60 characters"),
    ([f"Alias{i}" for i in range(MAX_ALIASES + 1)], f"At most {MAX_ALIASES} aliases"),
    (["Gemma", 3], "A list of words"),
    ("Gemma", "A list of words"),
])
def test_bad_aliases_are_refused_with_the_reason(db, aliases, words):
    with pytest.raises(ValidationError) as refused:
        ModelEntry(**ENDPOINT, aliases=aliases).full_clean()
    assert words in " ".join(refused.value.message_dict["aliases"])


def test_the_floor_is_the_first_word_of_the_name_and_slug():
    entry = ModelEntry(slug="qwen2.5-7b", name="Qwen2.5 7B Instruct", aliases=["Alibaba"])
    assert entry.identity_words() == ["Alibaba", "Qwen2.5", "Qwen", "qwen2.5", "qwen"]
    assert ModelEntry(slug="phi-3", name="Phi 3").identity_words() == []  # too short to match safely


def test_the_admin_edits_aliases_as_one_comma_separated_line(admin_client, db):
    response = admin_client.post("/admin/catalogue/modelentry/add/",
                                 {**ADMIN_ENDPOINT, "aliases": "OpenAI, GPT ,  Chat  GPT,"})
    assert response.status_code == 302, response.content.decode()[:3000]
    entry = ModelEntry.objects.get(slug="hosted")
    assert entry.aliases == ["OpenAI", "GPT", "Chat GPT"]
    page = admin_client.get(f"/admin/catalogue/modelentry/{entry.id}/change/").content.decode()
    assert 'value="OpenAI, GPT, Chat GPT"' in page
    response = admin_client.post(f"/admin/catalogue/modelentry/{entry.id}/change/",
                                 {**ADMIN_ENDPOINT, "aliases": "OpenAI, X"})
    assert response.status_code == 200 and "too short" in response.content.decode()
    assert ModelEntry.objects.get(slug="hosted").aliases == ["OpenAI", "GPT", "Chat GPT"]
    response = admin_client.post(f"/admin/catalogue/modelentry/{entry.id}/change/", {**ADMIN_ENDPOINT, "aliases": ""})
    assert response.status_code == 302 and ModelEntry.objects.get(slug="hosted").aliases == []


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_entries_already_stored_their_familys_aliases():
    executor = MigrationExecutor(connection)
    executor.migrate([("catalogue", "0002_engines")])
    old = executor.loader.project_state([("catalogue", "0002_engines")]).apps.get_model("catalogue", "ModelEntry")
    for entry in DEFAULT_ENTRIES:
        old.objects.create(**{k: v for k, v in entry.items() if k != "aliases"})
    old.objects.create(slug="my-gemma", name="Team copy", source="/models/gemma-3-1b-it")  # found by what it serves
    old.objects.create(slug="hosted", name="Hosted", engine="openai", remote_model="google/gemma-3-27b-it")
    old.objects.create(slug="other", name="Mistral 7B", engine="openai", remote_model="mistral-7b")
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    aliases = dict(ModelEntry.objects.values_list("slug", "aliases"))
    for entry in DEFAULT_ENTRIES:
        assert aliases[entry["slug"]] == entry["aliases"], entry["slug"]
    assert aliases["my-gemma"] == aliases["hosted"] == GEMMA_ALIASES
    assert aliases["other"] == []  # an unknown family keeps the floor alone (its name's first word)
