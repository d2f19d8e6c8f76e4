"""An openai or server entry is checked before it is enabled (the key is there, the endpoint answers,
its model is listed) and stays disabled with the reason when the check fails; a key pasted in the
admin is stored encrypted and never shown again. Against a real local HTTP server (models_endpoint)."""

import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.conf import settings
from django.db import connection

from arena.catalogue import checks
from arena.catalogue.models import KEY_TWICE, ModelEntry
from orchestration import sealing

from .models_endpoint import KEY, ModelsEndpoint, closed_port_url

# Transactions for real: the admin checks an entry once its save has committed, within the request.
pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[3]
ADD = "/admin/catalogue/modelentry/add/"
FORM = {"name": "Team model", "slug": "team-model", "engine": "openai", "remote_model": "team/model-a",
        "kind": "full", "precision": "auto", "memory_estimate_mb": 0, "max_concurrency": 0, "context_length": 0,
        "default_params": "{}", "enabled": "on"}


@pytest.fixture
def endpoint():
    with ModelsEndpoint() as server:
        yield server


def raw_rows() -> str:
    """Every column of every catalogue row, as the database holds it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM catalogue_modelentry")
        return repr(cursor.fetchall())


def add(admin_client, **fields):
    response = admin_client.post(ADD, {**FORM, **fields}, follow=True)
    assert response.status_code == 200
    return response.content.decode()


def test_a_pasted_key_is_stored_encrypted_checked_and_never_shown(admin_client, endpoint):
    page = add(admin_client, base_url=endpoint.url(), api_key=KEY)
    entry = ModelEntry.objects.get(slug="team-model")
    assert entry.enabled and entry.check_error == "" and entry.checked_at is not None, page
    assert "Team model passed its check and is enabled." in page
    assert endpoint.seen[-1] == ("/good/v1/models", f"Bearer {KEY}")  # the check sent the stored key
    assert KEY not in raw_rows() and entry.has_stored_key
    assert sealing.unseal(settings.ARENA_SECRETS_KEY, entry.api_key_sealed) == KEY
    assert entry.spec().api_key_sealed == entry.api_key_sealed and KEY not in entry.spec().to_json()

    change = admin_client.get(f"/admin/catalogue/modelentry/{entry.pk}/change/").content.decode()
    assert KEY not in change and "A key is stored (it is never shown)" in change
    assert 'name="remove_stored_key"' in change


def test_removing_the_stored_key(admin_client, endpoint):
    add(admin_client, base_url=endpoint.url(), api_key=KEY)
    entry = ModelEntry.objects.get(slug="team-model")
    response = admin_client.post(f"/admin/catalogue/modelentry/{entry.pk}/change/",
                                 {**FORM, "base_url": endpoint.url(), "remove_stored_key": "on"}, follow=True)
    entry.refresh_from_db()
    assert not entry.has_stored_key and entry.api_key_sealed == ""
    # Without its key the endpoint refuses it: checked again (what the check covers changed), disabled.
    assert not entry.enabled and entry.check_error == checks.NOT_OPENAI.format(url=f"{endpoint.url()}/models")
    assert "Team model stays disabled: Not an OpenAI-compatible endpoint" in response.content.decode()


def test_a_missing_key_variable_keeps_the_entry_disabled_with_the_reason(admin_client, endpoint, monkeypatch):
    monkeypatch.delenv("ARENA_ENDPOINT_KEY_NOT_SET", raising=False)
    page = add(admin_client, base_url=endpoint.url(),
               api_key_env="ARENA_ENDPOINT_KEY_NOT_SET")
    entry = ModelEntry.objects.get(slug="team-model")
    assert not entry.enabled and not endpoint.seen  # refused before anything was asked of the endpoint
    assert entry.check_error.startswith("The environment variable ARENA_ENDPOINT_KEY_NOT_SET is not set in this app's "
                                        "environment (on this single machine the workers get")
    assert "Team model stays disabled: The environment variable ARENA_ENDPOINT_KEY_NOT_SET" in page
    change = admin_client.get(f"/admin/catalogue/modelentry/{entry.pk}/change/").content.decode()
    assert re.search(r'<div class="readonly">Failed \d{4}-\d\d-\d\d [\d:]+ UTC: The environment variable '
                     r"ARENA_ENDPOINT_KEY_NOT_SET is not set", change)
    assert not ModelEntry.objects.enabled().filter(slug="team-model").exists()

    # Set where the workers run (here: this process, the app), enabling it passes.
    monkeypatch.setenv("ARENA_ENDPOINT_KEY_NOT_SET", KEY)
    admin_client.post(f"/admin/catalogue/modelentry/{entry.pk}/change/",
                      {**FORM, "base_url": endpoint.url(), "api_key_env": "ARENA_ENDPOINT_KEY_NOT_SET"})
    entry.refresh_from_db()
    assert entry.enabled and entry.check_error == ""


@pytest.mark.parametrize(("where", "reason"), [
    ("closed", "The endpoint is not reachable: GET http://127.0.0.1:"),
    ("broken", "Not an OpenAI-compatible endpoint, or the key is not accepted"),
    ("html", "Not an OpenAI-compatible endpoint, or the key is not accepted"),
])
def test_an_endpoint_that_does_not_answer_keeps_the_entry_disabled(admin_client, endpoint, where, reason):
    url = closed_port_url() if where == "closed" else endpoint.url(where)
    page = add(admin_client, base_url=url, api_key=KEY)
    entry = ModelEntry.objects.get(slug="team-model")
    assert not entry.enabled and reason in entry.check_error, entry.check_error
    assert reason in page and KEY not in page


def test_a_slow_endpoint_is_given_up_on_after_the_short_timeout(endpoint, monkeypatch):
    monkeypatch.setattr(checks, "READ_S", 0.3)  # the server answers after 2 s
    started = time.monotonic()
    problem = checks.endpoint_problem(endpoint.url("slow"), "team/model-a", KEY)
    assert problem == checks.NOT_REACHABLE.format(url=f"{endpoint.url('slow')}/models")
    assert time.monotonic() - started < 1.5


def test_a_server_entry_needs_commands_allowed_and_its_program(monkeypatch):
    monkeypatch.delenv("ARENA_ALLOW_SERVER_COMMANDS", raising=False)
    entry = ModelEntry(slug="srv", name="Server", engine="server", server_command="python3 -m x --port {port}")
    assert entry.run_check() == checks.COMMANDS_OFF
    monkeypatch.setenv("ARENA_ALLOW_SERVER_COMMANDS", "1")
    assert entry.run_check() == ""
    entry.server_command = "no-such-server-program-7f3 --port {port}"
    assert "'no-such-server-program-7f3' is not found" in entry.run_check()


def test_an_entry_already_enabled_is_not_checked_again_unless_what_the_check_covers_changes(endpoint):
    entry = ModelEntry(slug="e", name="E", engine="openai", base_url=endpoint.url(), remote_model="team/model-a")
    entry.store_key(KEY)
    assert entry.hold_for_check() and not entry.enabled  # new and enabled: held for the check
    entry.save()
    assert entry.enable_if_checked() == "" and ModelEntry.objects.get(pk=entry.pk).enabled
    entry.description = "Our hosted model"
    assert not entry.hold_for_check() and entry.enabled  # nothing the check covers changed
    entry.remote_model = "team/model-b"
    assert entry.hold_for_check() and not entry.enabled


def test_a_key_variable_may_not_name_the_apps_own_secrets(admin_client, endpoint):
    response = admin_client.post(ADD, {**FORM, "base_url": endpoint.url(), "api_key_env": "REDIS_URL"})
    assert response.status_code == 200 and "REDIS_URL is not an endpoint key variable" in (
        response.content.decode())
    assert not endpoint.seen and not ModelEntry.objects.filter(slug="team-model").exists()


def test_a_stored_key_and_a_key_variable_together_are_refused(admin_client, endpoint):
    response = admin_client.post(ADD, {**FORM, "base_url": endpoint.url(), "api_key": KEY,
                                       "api_key_env": "ARENA_ENDPOINT_KEY_TEAM"})
    assert response.status_code == 200 and KEY_TWICE[:40] in response.content.decode()
    assert KEY not in response.content.decode()  # the key field is not filled back in
    assert not ModelEntry.objects.filter(slug="team-model").exists()


def test_the_secrets_key_is_generated_once_into_the_data_directory_mode_600(tmp_path):
    code = "import arena.settings as s; print(s.ARENA_SECRETS_KEY)"
    env = {**{k: v for k, v in os.environ.items() if k != "ARENA_SECRETS_KEY"}, "ARENA_DATA_DIR": str(tmp_path),
           "DJANGO_SETTINGS_MODULE": "arena.settings"}
    run = [sys.executable, "-c", code]
    first = subprocess.run(run, env=env, cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    again = subprocess.run(run, env=env, cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    path = tmp_path / "secrets_key"
    assert first == again == path.read_text().strip()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert first != (tmp_path / "secret_key").read_text().strip()  # its own key, not Django's
    Fernet(first.encode())  # a valid Fernet key

    chosen = Fernet.generate_key().decode()
    given = subprocess.run(run, env={**env, "ARENA_SECRETS_KEY": chosen, "ARENA_DATA_DIR": str(tmp_path / "b")},
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    assert given == chosen and not (tmp_path / "b" / "secrets_key").exists()


def test_a_key_sealed_under_another_secrets_key_is_reported_not_used(endpoint):
    entry = ModelEntry(slug="e", name="E", engine="openai", base_url=endpoint.url(), remote_model="team/model-a",
                       api_key_sealed=sealing.seal(Fernet.generate_key().decode(), KEY))
    assert entry.run_check() == checks.KEY_UNREADABLE and not endpoint.seen
    assert entry.spec().api_key_sealed == entry.api_key_sealed and KEY not in entry.spec().to_json()
