"""The JSON API: token auth, validation messages, ownership, OpenAPI."""

import json
import re

import pytest
from django.core.management import call_command

from arena.accounts.models import ApiToken
from arena.generations.models import Generation
from tests.arena.api_client import api

pytestmark = pytest.mark.django_db




def test_arena_token_creates_a_service_account_and_prints_a_working_token(client, catalogue, capsys):
    call_command("arena_token", "robot", "--create-service-account")
    token = capsys.readouterr().out.strip()
    assert token.startswith("arena_")
    assert not ApiToken.objects.filter(digest=token).exists()  # only a hash is stored
    response = api(client, "get", "/api/v1/models", token)
    assert response.status_code == 200
    slugs = {m["slug"] for m in response.json()["models"]}
    assert slugs == {e.slug for e in catalogue}


@pytest.mark.parametrize("header", ["", "Bearer nope", "Bearer arena_wrong", "Basic abc"])
def test_requests_without_a_valid_token_get_401(client, catalogue, header):
    response = client.get("/api/v1/models", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401 and "token" in response.json()["error"]["message"]


def test_create_generation_returns_202_with_an_id(client, token, smollm, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        response = api(client, "post", "/api/v1/generations", token,
                       {"model": "smollm2-135m", "prompt": "Hi", "params": {"temperature": 0, "max_new_tokens": 8}})
    assert response.status_code == 202, response.content
    body = response.json()
    gen = Generation.objects.get(id=body["id"])
    assert gen.origin == "api" and gen.params["temperature"] == 0.0 and gen.params["max_new_tokens"] == 8
    assert gen.params["top_p"] == 0.95  # the model's default where the request says nothing
    assert body["status"] == "queued" and response["Location"] == f"/api/v1/generations/{gen.id}"
    assert len(callbacks) == 1


@pytest.mark.parametrize(
    "body,fragment",
    [
        ({"model": "smollm2-135m", "prompt": "Hi", "params": {"temperature": 9}}, "temperature"),
        ({"model": "smollm2-135m", "prompt": "Hi", "params": {"max_new_tokens": "many"}}, "max_new_tokens"),
        ({"model": "smollm2-135m", "prompt": "Hi", "params": {"beam_width": 4}}, "beam_width"),
        ({"model": "smollm2-135m", "prompt": "Hi", "params": [1]}, "params"),
        ({"model": "nope", "prompt": "Hi"}, "model"),
        ({"model": "smollm2-135m"}, "prompt"),
        ({"model": "smollm2-135m", "prompt": 42}, "prompt"),
        ({"model": "smollm2-135m", "prompt": "Hi", "colour": "red"}, "colour"),
        ({"model": "smollm2-135m", "prompt": "Hi", "params": {"stop": "END"}}, "stop"),
        ({"model": "smollm2-135m", "prompt": "Hi", "params": {"stop": ["a", "b", "c", "d", "e"]}}, "stop"),
    ],
)
def test_bad_input_gets_a_400_saying_what_is_wrong(client, token, smollm, body, fragment):
    response = api(client, "post", "/api/v1/generations", token, body)
    assert response.status_code == 400
    assert fragment in json.dumps(response.json())
    assert not Generation.objects.exists()


@pytest.mark.parametrize("raw", ["{not json", "[]", "", "\"string\""])
def test_a_body_that_is_not_a_json_object_gets_400(client, token, smollm, raw):
    response = api(client, "post", "/api/v1/generations", token, raw=raw)
    assert response.status_code == 400 and "JSON" in response.json()["error"]["message"]


def test_only_the_owner_can_read_a_generation(client, owner, outsider, smollm, token):
    gen = Generation.objects.create(owner=owner, model=smollm, prompt="Hi", params={})
    assert api(client, "get", f"/api/v1/generations/{gen.id}", token).json()["status"] == "queued"
    other = ApiToken.issue(outsider)
    assert api(client, "get", f"/api/v1/generations/{gen.id}", other).status_code == 404


def test_openapi_describes_every_route(client):
    spec = client.get("/api/v1/openapi.json").json()
    assert spec["openapi"].startswith("3.")
    described = {re.sub(r"\{\w+\}", "{id}", path) for path in spec["paths"]}  # {slug} and {id} alike
    assert described == api_routes() - {"/api/v1/openapi.json"}


def api_routes() -> set[str]:
    """Every /api/v1/ URL the project routes, written as OpenAPI paths ({id} for a parameter)."""
    from django.urls import get_resolver

    routes = set()
    for pattern in get_resolver().url_patterns:
        for sub in getattr(pattern, "url_patterns", [pattern]):
            route = str(getattr(pattern, "pattern", "")) + str(sub.pattern) if sub is not pattern else str(sub.pattern)
            if route.startswith("api/v1/"):
                routes.add("/" + re.sub(r"<(?:\w+:)?\w+>", "{id}", route))
    return routes


@pytest.fixture
def orchestrator_ticked(settings, tmp_path):
    """A real orchestrator (no workers yet) that has published one status snapshot."""
    from arena import streams
    from orchestration.backends.local import LocalBackend
    from orchestration.service import Orchestrator

    backend = LocalBackend(settings.REDIS_URL, settings.ARENA_REDIS_PREFIX, tmp_path / "logs", budget_mb=3000)
    orchestrator = Orchestrator(backend, streams.client(), streams.keys())
    orchestrator.tick()
    yield orchestrator
    keys = streams.keys()
    streams.client().delete(keys.orchestrator_status(), keys.orchestrator_heartbeat(), keys.orchestrator_queue())


def test_workers_needs_a_staff_token(client, owner, token, orchestrator_ticked):
    response = api(client, "get", "/api/v1/workers", token)
    assert response.status_code == 403 and "staff" in response.json()["error"]["message"]
    owner.is_staff = True
    owner.save()
    body = api(client, "get", "/api/v1/workers", token).json()
    assert body["orchestrator_running"] is True
    assert [{k: n[k] for k in ("node", "alive", "reason", "budget_mb", "reserved_mb", "in_use", "used_pct")}
            for n in body["nodes"]] == [{"node": "local", "alive": True, "reason": "", "budget_mb": 3000,
                                         "reserved_mb": 0, "in_use": None, "used_pct": 0}]
    assert body["workers"] == []


def test_the_status_page_is_for_staff(client, owner, orchestrator_ticked):
    client.force_login(owner)
    assert client.get("/status/").status_code == 302  # to the admin login
    owner.is_staff = True
    owner.save()
    page = client.get("/status/").content.decode()
    assert 'ws-connect="/ws/status/"' in page and "3000 MB" in page and "No model is loaded." in page
