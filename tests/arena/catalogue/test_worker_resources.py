"""The CPUs and GPUs a catalogue entry's worker asks a Ray cluster for (ModelEntry.cpus, .gpus):
validated as the admin and the staff API save them, and carried to the worker's ModelSpec."""

import json

import pytest
from django.core.exceptions import ValidationError

from arena.catalogue.models import ModelEntry
from inference.protocol import ModelSpec
from tests.arena.api_client import api

pytestmark = pytest.mark.django_db

ENDPOINT = {"slug": "hosted", "name": "Hosted model", "engine": "openai", "base_url": "https://api.example.com/v1",
            "remote_model": "gpt-x", "api_key_env": "ARENA_ENDPOINT_KEY_TEAM", "enabled": False}


@pytest.fixture
def staff_token(capsys):
    from django.core.management import call_command

    call_command("arena_token", "ops", "--staff", "--create-service-account")
    return capsys.readouterr().out.strip()


def local(smollm, **fields) -> ModelEntry:
    """A llama.cpp entry on the shipped SmolLM2 GGUF (a model that runs on our machines)."""
    return ModelEntry(**{"slug": "local-e", "name": "Local E", "engine": "llamacpp", "source": smollm.source,
                         "gguf_file": smollm.gguf_file, **fields})


def endpoint(**fields) -> ModelEntry:
    return ModelEntry(**{**{k: v for k, v in ENDPOINT.items() if k != "enabled"}, **fields})


def problems(entry: ModelEntry) -> dict[str, str]:
    with pytest.raises(ValidationError) as refused:
        entry.full_clean()
    return {name: " ".join(messages) for name, messages in refused.value.message_dict.items()}


def test_an_entry_asks_for_two_cpus_and_no_gpu_by_default(smollm):
    entry = local(smollm)
    entry.full_clean()
    assert (entry.cpus, entry.gpus) == (2.0, 0.0)
    assert (entry.spec().cpus, entry.spec().gpus) == (2.0, 0.0)


@pytest.mark.parametrize(("cpus", "gpus"), [(1, 0), (4, 0.5), (2, 1), (8, 2), (2, 0.25), (16, 0.3333)])
def test_whole_cpus_and_a_gpu_share_or_whole_gpus_are_accepted(smollm, cpus, gpus):
    local(smollm, cpus=cpus, gpus=gpus).full_clean()


@pytest.mark.parametrize(("fields", "field", "words"), [
    ({"cpus": 0}, "cpus", "more than 0"),
    ({"cpus": -1}, "cpus", "more than 0"),
    ({"cpus": 0.5}, "cpus", "whole number, at least 1"),
    ({"cpus": 2.5}, "cpus", "whole number, at least 1"),
    ({"cpus": 4096}, "cpus", "At most 1024 CPUs"),
    ({"cpus": float("nan")}, "cpus", "must be a number"),
    ({"gpus": -0.5}, "gpus", "cannot be negative"),
    ({"gpus": 1.5}, "gpus", "1.5 GPUs cannot be placed"),
    ({"gpus": 0.00001}, "gpus", "at most 4 decimals"),
    ({"gpus": 128}, "gpus", "At most 64 GPUs"),
    ({"gpus": float("inf")}, "gpus", "must be a number"),
])
def test_what_no_worker_can_ask_for_is_refused_with_the_reason(smollm, fields, field, words):
    found = problems(local(smollm, **fields))
    assert words in found.get(field, ""), found
    assert set(found) == {field}, found


def test_an_endpoint_asks_for_little_cpu_and_no_gpu():
    endpoint(cpus=0.25).full_clean()  # its worker only relays the stream
    found = problems(endpoint(gpus=1))
    assert "runs on its own server" in found["gpus"] and "0.25 is fine" in found["gpus"]
    assert "0.25 is fine" in problems(endpoint(cpus=0))["cpus"]
    assert "fraction below 1" in problems(endpoint(cpus=1.5))["cpus"]


def test_a_server_entry_may_ask_for_gpus():
    """Its worker starts the server (vLLM) on the machine Ray chooses: that machine needs the GPUs."""
    server = ModelEntry(slug="vllm", name="vLLM", engine="server", source="Qwen/Qwen2.5-1.5B",
                        server_command="vllm serve {model} --port {port}", cpus=4, gpus=1)
    server.full_clean()
    assert (server.spec().cpus, server.spec().gpus) == (4.0, 1.0)


def test_the_spec_carries_them_through_its_json(smollm):
    spec = local(smollm, cpus=4, gpus=0.5).spec()
    assert (spec.cpus, spec.gpus) == (4.0, 0.5)
    raw = spec.to_json()
    assert (json.loads(raw)["cpus"], json.loads(raw)["gpus"]) == (4.0, 0.5)
    assert ModelSpec.from_json(raw) == spec
    # A spec written before the fields existed reads as the defaults.
    older = {k: v for k, v in json.loads(raw).items() if k not in ("cpus", "gpus")}
    assert (ModelSpec.from_json(json.dumps(older)).cpus, ModelSpec.from_json(json.dumps(older)).gpus) == (2.0, 0.0)


def test_an_endpoint_spec_asks_for_no_gpu_even_if_stored_with_one():
    stored = endpoint(cpus=0.25, gpus=1)  # saved around validation (a shell, an old row)
    assert (stored.spec().cpus, stored.spec().gpus) == (0.25, 0.0)


# --- the staff API ---------------------------------------------------------------------------
def test_the_api_shows_sets_and_changes_them(client, catalogue, staff_token):
    entries = {e["slug"]: e for e in api(client, "get", "/api/v1/catalogue", staff_token).json()["entries"]}
    assert (entries["smollm2-135m"]["cpus"], entries["smollm2-135m"]["gpus"]) == (2.0, 0.0)

    added = api(client, "post", "/api/v1/catalogue", staff_token, {**ENDPOINT, "cpus": 0.25})
    assert added.status_code == 201, added.content
    assert (added.json()["cpus"], added.json()["gpus"]) == (0.25, 0.0)

    changed = api(client, "patch", f"/api/v1/catalogue/{catalogue[0].slug}", staff_token, {"cpus": 4, "gpus": 0.5})
    assert changed.status_code == 200, changed.content
    assert (changed.json()["cpus"], changed.json()["gpus"]) == (4.0, 0.5)
    assert catalogue[0].__class__.objects.get(pk=catalogue[0].pk).spec().gpus == 0.5


@pytest.mark.parametrize(("body", "field", "words"), [
    ({"cpus": 0}, "cpus", "more than 0"),
    ({"gpus": 1.5}, "gpus", "1.5 GPUs cannot be placed"),
    ({"gpus": -1}, "gpus", "cannot be negative"),
    ({"cpus": "2"}, "cpus", "must be a number"),
    ({"gpus": True}, "gpus", "must be a number"),
    ({"cpus": 10**400}, "cpus", "must be a number"),
])
def test_the_api_refuses_a_bad_figure_with_a_400_naming_it(client, catalogue, staff_token, body, field, words):
    response = api(client, "patch", f"/api/v1/catalogue/{catalogue[0].slug}", staff_token, body)
    assert response.status_code == 400, response.content
    assert words in response.json()["error"]["fields"][field]
    assert (ModelEntry.objects.get(pk=catalogue[0].pk).cpus, ModelEntry.objects.get(pk=catalogue[0].pk).gpus) == (
        2.0, 0.0)


def test_the_api_refuses_nan_and_a_gpu_for_an_endpoint(client, staff_token):
    nan = api(client, "post", "/api/v1/catalogue", staff_token, None,
              raw=json.dumps({**ENDPOINT, "cpus": float("nan")}))
    assert nan.status_code == 400 and "must be a number" in nan.json()["error"]["fields"]["cpus"]
    gpu = api(client, "post", "/api/v1/catalogue", staff_token, {**ENDPOINT, "gpus": 1})
    assert gpu.status_code == 400 and "runs on its own server" in gpu.json()["error"]["fields"]["gpus"]
    assert not ModelEntry.objects.filter(slug="hosted").exists()


# --- the admin --------------------------------------------------------------------------------
def admin_form(smollm, **fields) -> dict:
    return {"slug": "local-e", "name": "Local E", "engine": "llamacpp", "kind": "full", "precision": "auto",
            "source": smollm.source, "gguf_file": smollm.gguf_file, "memory_estimate_mb": 300, "max_concurrency": 0,
            "default_params": "{}", "context_length": 0, "enabled": "on", **fields}


def test_the_admin_shows_sets_and_refuses_them(admin_client, smollm):
    add = admin_client.get("/admin/catalogue/modelentry/add/").content.decode()
    assert 'name="cpus" value="2.0"' in add and 'name="gpus" value="0.0"' in add
    refused = admin_client.post("/admin/catalogue/modelentry/add/", admin_form(smollm, cpus="2", gpus="1.5"))
    assert refused.status_code == 200 and "1.5 GPUs cannot be placed" in refused.content.decode()
    assert not ModelEntry.objects.filter(slug="local-e").exists()

    saved = admin_client.post("/admin/catalogue/modelentry/add/", admin_form(smollm, cpus="4", gpus="0.5"))
    assert saved.status_code == 302, saved.content.decode()[:3000]
    entry = ModelEntry.objects.get(slug="local-e")
    assert (entry.cpus, entry.gpus) == (4.0, 0.5)
    change = admin_client.get(f"/admin/catalogue/modelentry/{entry.pk}/change/").content.decode()
    assert 'name="cpus" value="4.0"' in change and 'name="gpus" value="0.5"' in change


def test_the_admin_takes_the_defaults_for_empty_figures(admin_client, smollm):
    saved = admin_client.post("/admin/catalogue/modelentry/add/", admin_form(smollm, cpus="", gpus=""))
    assert saved.status_code == 302, saved.content.decode()[:3000]
    entry = ModelEntry.objects.get(slug="local-e")
    assert (entry.cpus, entry.gpus) == (2.0, 0.0)
    refused = admin_client.post(f"/admin/catalogue/modelentry/{entry.pk}/change/",
                                admin_form(smollm, cpus="0", gpus="0"))
    assert refused.status_code == 200 and "CPUs must be more than 0" in refused.content.decode()


def test_the_admin_keeps_an_endpoint_off_gpus(admin_client):
    """The GPUs field is in the Model files section, hidden for an endpoint: a value left there goes back to 0."""
    form = {**ENDPOINT, "kind": "full", "precision": "auto", "memory_estimate_mb": 0, "max_concurrency": 0,
            "default_params": "{}", "context_length": 0, "cpus": "0.25", "gpus": "1"}
    form.pop("enabled")
    saved = admin_client.post("/admin/catalogue/modelentry/add/", form)
    assert saved.status_code == 302, saved.content.decode()[:3000]
    entry = ModelEntry.objects.get(slug="hosted")
    assert (entry.cpus, entry.gpus) == (0.25, 0.0)
