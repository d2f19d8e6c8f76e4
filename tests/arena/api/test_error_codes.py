"""Every JSON error of the API has a machine code from one documented list (arena.api.http.CODES):
the OpenAPI document's Error schema enumerates it, docs/api.md tables it, and real errors of
several endpoints carry the code their case calls for."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import jsonschema_rs
import pytest

from arena import conversations
from arena.api.http import CODES, STATUS_CODES, error
from arena.generations import limits
from arena.openapi import SPEC
from tests.arena.api_client import api
from tests.arena.factories import comparison

pytestmark = pytest.mark.django_db

DOCS = Path(__file__).resolve().parents[3] / "docs" / "api.md"


def error_schema():
    return {**SPEC["components"]["schemas"]["Error"], "$defs": SPEC["components"]["schemas"]}


def test_the_openapi_document_lists_every_code_and_requires_one():
    error_object = SPEC["components"]["schemas"]["Error"]["properties"]["error"]
    assert error_object["properties"]["code"]["enum"] == list(CODES)
    assert "code" in error_object["required"]
    assert set(STATUS_CODES.values()) <= set(CODES)


def test_docs_api_md_tables_every_code_with_its_status():
    rows = dict(re.findall(r"^\| `(\w+)` \| (\d+) \|", DOCS.read_text(), re.M))
    assert set(rows) == set(CODES)
    for code, status in rows.items():
        assert CODES[code].startswith(status + ":"), code


def test_an_error_with_an_unknown_code_cannot_be_made():
    with pytest.raises(ValueError, match="list it in CODES"):
        error(400, "Nope.", code="made_up")


def test_the_refusals_raised_below_the_endpoints_carry_their_codes(settings):
    settings.ARENA_MAX_CONVERSATION_TURNS = 1
    with pytest.raises(conversations.ConversationTooLong) as too_long:
        conversations.check(prompt="Hi", history=[{"role": "user", "content": "a"}])
    assert too_long.value.status == 400
    assert too_long.value.as_json() == {"error": {
        "code": "conversation_too_long", "message": "The conversation has 2 user turns, at most 1 allowed "
        "(the conversation limit).", "limit": conversations.TURNS, "allowed": 1, "current": 2}}
    refused = limits.LimitExceeded(limits.REQUESTS_PER_MINUTE, allowed=1, current=1, retry_after_s=3, message="Wait.")
    assert refused.as_json()["error"]["code"] == "limit_exceeded"


@pytest.fixture
def others_comparison(outsider, catalogue):
    return comparison(outsider, catalogue[0], catalogue[3])


@pytest.fixture
def running_comparison(owner, catalogue):
    return comparison(owner, catalogue[0], catalogue[3], texts=None)


def cases(others, running):
    """(method, path, token?, body or raw, expected status, expected code)."""
    return [
        ("get", "/api/v1/suites", False, None, 401, "unauthorized"),
        ("get", "/api/v1/no/such/thing", True, None, 404, "not_found"),
        ("get", f"/api/v1/comparisons/{others.id}", True, None, 404, "not_found"),
        ("get", f"/api/v1/tournaments/{uuid.uuid4()}", True, None, 404, "not_found"),
        ("post", "/api/v1/generations", True, b"[1, 2]", 400, "invalid_request"),
        ("post", "/api/v1/generations", True, {"model": "smollm2-135m", "prompt": "Hi", "params": []},
         400, "invalid_params"),
        ("post", "/api/v1/generations", True, {"model": "smollm2-135m", "prompt": "Hi", "params": {"top_p": 7}},
         400, "invalid_params"),
        ("post", f"/api/v1/comparisons/{running.id}/vote", True, {"outcome": "left"}, 409, "not_votable"),
        ("get", "/api/v1/workers", True, None, 403, "forbidden"),
        ("delete", "/api/v1/generations", True, None, 405, "method_not_allowed"),
    ]


@pytest.mark.parametrize("case", range(10))
def test_real_errors_carry_the_code_their_case_calls_for(client, token, others_comparison, running_comparison, case):
    method, path, with_token, body, status, code = cases(others_comparison, running_comparison)[case]
    raw = body if isinstance(body, bytes) else None
    response = api(client, method, path, token if with_token else None, None if raw else body, raw=raw)
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    jsonschema_rs.Draft202012Validator(error_schema()).validate(response.json())


def test_a_body_over_the_size_limit_is_a_413_with_its_code(client, token, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10
    response = api(client, "post", "/api/v1/generations", token, {"model": "smollm2-135m", "prompt": "x" * 100})
    assert response.status_code == 413 and response.json()["error"]["code"] == "request_too_large"


def test_a_method_an_endpoint_does_not_take_gets_a_json_405_with_the_allowed_ones(client, token):
    """Django's require_http_methods answered with an HTML page no API client could read."""
    response = api(client, "put", "/api/v1/comparisons", token, {"prompt": "Hi"})
    assert response.status_code == 405 and response["Allow"] == "POST"
    assert response.json()["error"] == {"code": "method_not_allowed",
                                        "message": "/api/v1/comparisons takes POST, not PUT."}
