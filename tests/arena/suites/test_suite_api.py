"""The suite endpoints: create, list, read, delete; the same checks as an upload, naming the item."""

import json

import pytest

from arena.suites.models import Suite
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import suite

pytestmark = pytest.mark.django_db

SCHEMA = {"type": "object", "required": ["city"]}


def test_create_read_list_and_delete(client, token, owner):
    body = {"name": "Capitals", "tag": "Geo", "prompts": [
        {"prompt": "Capital of France?", "system_prompt": "Be brief.", "reference": "Paris", "json_schema": SCHEMA},
        {"prompt": "Say hi", "regex": "^hi$", "json_schema": None}]}
    created = api(client, "post", "/api/v1/suites", token, body)
    assert created.status_code == 201, created.content
    data = created.json()
    assert created["Location"] == f"/api/v1/suites/{data['id']}"
    assert (data["name"], data["tag"], data["prompt_count"]) == ("Capitals", "geo", 2)
    assert data["prompts"][0] == {"position": 1, "prompt": "Capital of France?", "system_prompt": "Be brief.",
                                  "reference": "Paris", "json_schema": SCHEMA, "regex": "", "checks": []}
    assert data["prompts"][1]["regex"] == "^hi$" and data["prompts"][1]["json_schema"] is None
    assert_conforms(data, "/api/v1/suites", "post", 201)

    read = api(client, "get", f"/api/v1/suites/{data['id']}", token).json()
    assert read == data
    assert_conforms(read, "/api/v1/suites/{id}")
    listed = api(client, "get", "/api/v1/suites", token).json()
    assert [s["id"] for s in listed["suites"]] == [data["id"]] and "prompts" not in listed["suites"][0]
    assert_conforms(listed, "/api/v1/suites")

    assert api(client, "delete", f"/api/v1/suites/{data['id']}", token).status_code == 204
    assert api(client, "get", f"/api/v1/suites/{data['id']}", token).status_code == 404
    assert not Suite.objects.exists()


def test_the_list_holds_only_the_callers_suites(client, token, owner, outsider):
    suite(owner, name="Mine")
    suite(outsider, name="Theirs")
    assert [s["name"] for s in api(client, "get", "/api/v1/suites", token).json()["suites"]] == ["Mine"]


@pytest.mark.parametrize(("body", "message"), [
    ({"prompts": [{"prompt": "Hi"}]}, "name: This field is required."),
    ({"name": "  ", "prompts": [{"prompt": "Hi"}]}, "name: Give the suite a name."),
    ({"name": 5, "prompts": [{"prompt": "Hi"}]}, "name and tag must be strings."),
    ({"name": "S", "tag": "no spaces!", "prompts": [{"prompt": "Hi"}]}, "tag: A tag is"),
    ({"name": "S", "prompts": [{"prompt": "Hi"}], "extra": 1}, "Unknown field(s): extra."),
    ({"name": "S"}, "Invalid prompts: prompts must be a list of 1 to 500 prompt objects"),
    ({"name": "S", "prompts": []}, "Invalid prompts: prompts must be a list of 1 to 500 prompt objects"),
    ({"name": "S", "prompts": [{"prompt": "Hi"}, {"system_prompt": "x"}, {"prompt": "x", "json_schema": {"type": 5}}]},
     "Invalid prompts: prompts[1]: 'prompt' is missing; prompts[2]: Not a valid JSON schema"),
    ({"name": "S", "prompts": [{"prompt": "x", "regex": "a", "json_schema": {}}]},
     "Invalid prompts: prompts[0]: Give a JSON schema or a regex, not both."),
    ({"name": "S", "prompts": [{"prompt": "x", "regex": "("}]}, "Invalid prompts: prompts[0]: Not a valid regex"),
])
def test_invalid_bodies_are_400_saying_what_is_wrong(client, token, body, message):
    response = api(client, "post", "/api/v1/suites", token, body)
    assert response.status_code == 400
    assert message in response.json()["error"]["message"], response.json()
    assert not Suite.objects.exists()


def test_too_many_prompts_are_refused(client, token):
    body = {"name": "S", "prompts": [{"prompt": "Hi"}] * 501}
    response = api(client, "post", "/api/v1/suites", token, body)
    assert response.status_code == 400 and response.json()["error"]["fields"] == {
        "prompts": "prompts[500]: a suite holds at most 500 prompts"}


@pytest.mark.parametrize("raw", ['"Hi \\ud800"', '"Hi \\u0000"'])
def test_text_no_database_can_store_is_a_400(client, token, raw):
    body = json.dumps({"name": "S", "prompts": [{"prompt": "Hi", "json_schema": {"description": "@"}}]})
    response = api(client, "post", "/api/v1/suites", token, raw=body.replace('"@"', raw))
    assert response.status_code == 400 and not Suite.objects.exists()


def test_a_wrong_method_is_405(client, token, owner):
    s = suite(owner)
    assert api(client, "put", f"/api/v1/suites/{s.id}", token, {}).status_code == 405
    assert api(client, "delete", "/api/v1/suites", token).status_code == 405
