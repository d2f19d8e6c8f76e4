"""Where an endpoint's key may go: a stored key only to the origin (scheme, host, port) it was given
for, a key variable only if it is one of ARENA_ENDPOINT_KEY_*, never through a redirect. Against
real HTTP servers on 127.0.0.1, each on a port of its own (models_endpoint, faulty_endpoint), the
second standing for a host a staff token would like the key sent to."""

import threading

import pytest
from django.core.management import call_command

from arena.catalogue import checks, keys
from arena.catalogue.keys import KEY_DROPPED, KEY_VARIABLE_OUTSIDE
from arena.catalogue.models import ModelEntry
from inference import engines
from inference.chunks import Failure
from inference.config import KEY_VARIABLE_PREFIX
from inference.endpoint import EndpointEngine, stream_request
from inference.protocol import ModelSpec, SamplingParams
from tests.arena.api_client import api
from tests.inference.faulty_endpoint import FaultyServer

from .models_endpoint import KEY, ModelsEndpoint

# Transactions for real: the admin checks an entry once its save has committed, within the request.
pytestmark = pytest.mark.django_db(transaction=True)
ADMIN_FORM = {"name": "Team model", "slug": "team", "engine": "openai", "remote_model": "team/model-a",
              "kind": "full", "precision": "auto", "memory_estimate_mb": 0, "max_concurrency": 0, "context_length": 0,
              "cpus": 0.25, "gpus": 0, "default_params": "{}", "enabled": "on"}


@pytest.fixture
def staff_token(capsys):
    call_command("arena_token", "ops", "--staff", "--create-service-account")
    return capsys.readouterr().out.strip()


@pytest.fixture
def first():
    with ModelsEndpoint() as server:
        yield server


@pytest.fixture
def second():
    with ModelsEndpoint() as server:
        yield server


def entry_body(url: str, **fields) -> dict:
    return {"slug": "team", "name": "Team model", "engine": "openai", "base_url": url,
            "remote_model": "team/model-a", "cpus": 0.25, **fields}


def test_a_stored_key_is_not_sent_to_another_origin_after_a_patch_of_the_base_url_only(client, staff_token, first,
                                                                                      second):
    created = api(client, "post", "/api/v1/catalogue", staff_token, entry_body(first.url(), api_key=KEY))
    assert created.status_code == 201 and created.json()["enabled"], created.content
    assert first.seen == [("/good/v1/models", f"Bearer {KEY}")]
    assert "notices" not in created.json()

    moved = api(client, "patch", "/api/v1/catalogue/team", staff_token, {"base_url": second.url()})
    assert second.seen == [("/good/v1/models", "")]  # the check asked the new host, with no key
    assert moved.status_code == 200
    body = moved.json()
    assert not body["api_key_stored"] and not body["enabled"]
    assert body["notices"] == [{"code": "api_key_dropped", "message": KEY_DROPPED}]
    assert body["check_error"] == checks.NOT_OPENAI.format(url=f"{second.url()}/models")
    assert KEY not in moved.content.decode()

    # Given again for the new host, in the same request as the change or after it: it goes there.
    again = api(client, "patch", "/api/v1/catalogue/team", staff_token, {"api_key": KEY, "enabled": True})
    assert again.json()["enabled"] and "notices" not in again.json()
    assert second.seen[-1] == ("/good/v1/models", f"Bearer {KEY}")
    back = api(client, "patch", "/api/v1/catalogue/team", staff_token, {"base_url": first.url(), "api_key": KEY})
    assert back.json()["enabled"] and back.json()["api_key_stored"] and "notices" not in back.json()
    assert first.seen[-1] == ("/good/v1/models", f"Bearer {KEY}")


def test_a_change_of_path_only_keeps_the_stored_key(client, staff_token, first):
    api(client, "post", "/api/v1/catalogue", staff_token, entry_body(first.url("one"), api_key=KEY))
    # The same scheme, host and port with another path (and a trailing slash): the key stays.
    same = f"http://127.0.0.1:{first.server_address[1]}/good/v1/"
    changed = api(client, "patch", "/api/v1/catalogue/team", staff_token, {"base_url": same})
    assert changed.status_code == 200 and changed.json()["api_key_stored"] and changed.json()["enabled"]
    assert "notices" not in changed.json()
    assert first.seen == [("/one/v1/models", f"Bearer {KEY}"), ("/good/v1/models", f"Bearer {KEY}")]


def test_the_admin_form_drops_a_stored_key_when_the_host_changes(admin_client, first, second):
    admin_client.post("/admin/catalogue/modelentry/add/", {**ADMIN_FORM, "base_url": first.url(), "api_key": KEY})
    entry = ModelEntry.objects.get(slug="team")
    assert entry.enabled and entry.has_stored_key
    page = admin_client.post(f"/admin/catalogue/modelentry/{entry.pk}/change/",
                             {**ADMIN_FORM, "base_url": second.url()}, follow=True).content.decode()
    assert second.seen == [("/good/v1/models", "")]
    entry.refresh_from_db()
    assert not entry.has_stored_key and not entry.enabled
    assert KEY_DROPPED.replace("'", "&#x27;") in page
    change = admin_client.get(f"/admin/catalogue/modelentry/{entry.pk}/change/").content.decode()
    assert "a key is stored" not in change


@pytest.mark.parametrize("name", ["HOME", "ARENA_SECRETS_KEY", "REDIS_URL", "PATH", "arena_endpoint_key_team",
                                  KEY_VARIABLE_PREFIX])
def test_a_key_variable_outside_the_prefix_is_refused(client, staff_token, first, name):
    refused = api(client, "post", "/api/v1/catalogue", staff_token, entry_body(first.url(), api_key_env=name))
    assert refused.status_code == 400, refused.content
    error = refused.json()["error"]
    assert error["code"] == "key_variable_not_allowed"
    assert error["fields"]["api_key_env"] == KEY_VARIABLE_OUTSIDE.format(name=name)
    assert KEY_VARIABLE_PREFIX in error["fields"]["api_key_env"]
    assert not first.seen and not ModelEntry.objects.exists()


def test_the_admin_form_refuses_a_key_variable_outside_the_prefix(admin_client, first):
    page = admin_client.post("/admin/catalogue/modelentry/add/",
                             {**ADMIN_FORM, "base_url": first.url(), "api_key_env": "HOME"}).content.decode()
    assert KEY_VARIABLE_OUTSIDE.format(name="HOME").replace("'", "&#x27;") in page
    assert not first.seen and not ModelEntry.objects.exists()


def test_an_existing_entry_naming_another_variable_fails_its_check_without_sending_it(first, monkeypatch):
    monkeypatch.setenv("TEAM_KEY", KEY)  # named before the prefix was the rule: rename the variable
    entry = ModelEntry.objects.create(slug="team", name="Team", engine="openai", base_url=first.url(),
                                      remote_model="team/model-a", api_key_env="TEAM_KEY", enabled=False)
    assert entry.run_check() == KEY_VARIABLE_OUTSIDE.format(name="TEAM_KEY")
    assert not first.seen
    with pytest.raises(engines.EngineConfigError, match=KEY_VARIABLE_PREFIX):  # nor does a worker read it
        engines.serve(entry.spec(), max_batch=1)


def test_a_variable_under_the_prefix_works_end_to_end(client, staff_token, first, monkeypatch):
    name = f"{KEY_VARIABLE_PREFIX}TEAM"
    monkeypatch.setenv(name, KEY)
    created = api(client, "post", "/api/v1/catalogue", staff_token, entry_body(first.url(), api_key_env=name))
    assert created.status_code == 201 and created.json()["enabled"], created.content
    assert first.seen == [("/good/v1/models", f"Bearer {KEY}")]

    # The worker's side: the engine it serves reads the same variable and streams with it.
    with FaultyServer() as faulty:
        entry = ModelEntry.objects.get(slug="team")
        entry.base_url, entry.remote_model = faulty.base_url, "ok"
        engine = engines.serve(entry.spec(), max_batch=1).engine
        assert isinstance(engine, EndpointEngine)
        with engine.client(1) as http:
            chunks = list(stream_request(http, engine, [{"role": "user", "content": "Hi"}],
                                         SamplingParams(max_new_tokens=8), threading.Event()))
        assert not isinstance(chunks[-1], Failure)
        assert faulty.requests == [("ok", f"Bearer {KEY}")]


def test_a_redirect_to_another_origin_gets_no_key(first, second):
    """Neither the check nor a worker follows a redirect: a key never reaches where it points."""
    first.moved_to = second.origin
    assert checks.endpoint_problem(first.url("moved"), "team/model-a", KEY) == checks.NOT_OPENAI.format(
        url=f"{first.url('moved')}/models")
    engine = EndpointEngine(base_url=first.url("moved"), model="team/model-a", api_key=KEY)
    with engine.client(1) as http:
        chunks = list(stream_request(http, engine, [{"role": "user", "content": "Hi"}],
                                     SamplingParams(max_new_tokens=8), threading.Event()))
    assert isinstance(chunks[-1], Failure)
    assert [seen for seen in first.seen if seen[1] != f"Bearer {KEY}"] == [] and len(first.seen) == 2
    assert not second.seen


def test_a_base_url_with_a_user_name_or_password_is_refused(client, staff_token, first):
    url = first.url().replace("http://", "http://team:pw-Lk2@")
    refused = api(client, "post", "/api/v1/catalogue", staff_token, entry_body(url, api_key=KEY))
    assert refused.status_code == 400 and "user name or password" in refused.json()["error"]["fields"]["base_url"]
    assert not first.seen


def test_the_spec_of_an_endpoint_names_the_variable_only(monkeypatch):
    spec = ModelSpec(slug="s", engine="openai", base_url="http://127.0.0.1:9/v1", remote_model="m",
                     api_key_env="HOME")
    with pytest.raises(engines.EngineConfigError, match=KEY_VARIABLE_PREFIX):
        engines.serve(spec, max_batch=1)


def test_an_endpoint_off_the_operators_host_list_is_refused_and_never_asked(client, staff_token, first, second,
                                                                           monkeypatch):
    monkeypatch.setenv("ARENA_ENDPOINT_HOSTS", f"api.example.com, 127.0.0.1:{first.server_address[1]}")
    refused = api(client, "post", "/api/v1/catalogue", staff_token, entry_body(second.url(), api_key=KEY))
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "endpoint_host_not_allowed"
    assert refused.json()["error"]["fields"]["base_url"] == keys.HOST_NOT_ALLOWED.format(
        hosts=f"api.example.com, 127.0.0.1:{first.server_address[1]}")
    allowed = api(client, "post", "/api/v1/catalogue", staff_token, entry_body(first.url(), api_key=KEY))
    assert allowed.status_code == 201 and allowed.json()["enabled"]

    # An entry saved before the list was set: its check and its worker send nothing to its host.
    older = ModelEntry.objects.create(slug="older", name="Older", engine="openai", base_url=second.url(),
                                      remote_model="team/model-a", enabled=False)
    older.store_key(KEY)
    assert older.run_check() == keys.host_problem(second.url()) != ""
    with pytest.raises(engines.EngineConfigError, match="ARENA_ENDPOINT_HOSTS"):
        engines.serve(older.spec(), max_batch=1)
    assert not second.seen
