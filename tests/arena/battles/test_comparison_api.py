"""The comparison endpoints of the JSON API: validation, ownership, votes, the OpenAPI entry."""

import json

import pytest

from arena.accounts.models import ApiToken
from arena.battles.actions import start_battle
from arena.battles.models import Battle
from arena.generations.models import Generation
from tests.arena.api_client import api

pytestmark = pytest.mark.django_db




def create(client, token, **body):
    return api(client, "post", "/api/v1/comparisons", token, {
        "left_model": "smollm2-135m", "right_model": "smollm2-135m-awq", "prompt": "Hi", **body})


def test_create_runs_both_and_read_shows_names_params_and_status(client, catalogue, token):
    response = create(client, token, params={"temperature": 0, "max_new_tokens": 8}, right_params={"temperature": 1})
    assert response.status_code == 202
    body = response.json()
    assert response["Location"] == f"/api/v1/comparisons/{body['id']}"
    assert body["left"]["model"] == "smollm2-135m" and body["right"]["model"] == "smollm2-135m-awq"
    assert body["left"]["params"]["temperature"] == 0 and body["right"]["params"]["temperature"] == 1
    assert body["right"]["params"]["max_new_tokens"] == 8 and body["left"]["status"] == "queued"
    read = api(client, "get", f"/api/v1/comparisons/{body['id']}", token).json()
    assert read["id"] == body["id"] and read["outcome"] is None and not read["blind"]
    assert Generation.objects.filter(origin=Generation.Origin.API).count() == 2  # runs to the end unwatched


@pytest.mark.parametrize("body,status,fragment", [
    ({"left_model": "nope"}, 400, "left_model"),
    ({"prompt": ""}, 400, "prompt"),
    ({"params": {"temperature": "hot"}}, 400, "temperature"),
    ({"left_params": {"max_new_tokens": 10**9}}, 400, "max_new_tokens"),
    ({"params": []}, 400, "params must be an object"),
    ({"colour": "blue"}, 400, "Unknown field"),
    ({"prompt": 5}, 400, "must be strings"),
])
def test_bad_requests_get_a_clear_400_and_create_nothing(client, catalogue, token, body, status, fragment):
    response = create(client, token, **body)
    assert response.status_code == status and fragment in json.dumps(response.json())
    assert not Battle.objects.exists()


def test_malformed_json_and_missing_token(client, catalogue, token):
    assert api(client, "post", "/api/v1/comparisons", token, raw="{nope").status_code == 400
    assert create(client, None).status_code == 401


def test_vote_after_both_answers_and_ownership(client, catalogue, owner, outsider, token):
    sides = {s: {"model": catalogue[0], "params": {}} for s in ("left", "right")}
    battle = start_battle(owner, prompt="Hi", sides=sides)
    url = f"/api/v1/comparisons/{battle.id}/vote"
    assert api(client, "post", url, token, {"outcome": "left"}).status_code == 409
    for gen in (battle.left, battle.right):
        gen.finish(Generation.Status.DONE, text="ok")
    assert api(client, "post", url, token, {"outcome": "sideways"}).status_code == 400
    voted = api(client, "post", url, token, {"outcome": "both_bad"})
    assert voted.status_code == 200 and voted.json()["outcome"] == "both_bad"
    other = ApiToken.issue(outsider)
    assert api(client, "get", f"/api/v1/comparisons/{battle.id}", other).status_code == 404
    assert api(client, "post", url, other, {"outcome": "left"}).status_code == 404
    assert Battle.objects.get().outcome == "both_bad"


def test_a_tournament_battle_is_not_readable_as_a_comparison(client, catalogue, owner, token):
    sides = {s: {"model": catalogue[i], "params": {}} for s, i in (("left", 0), ("right", 3))}
    battle = start_battle(owner, prompt="Hi", sides=sides, mode=Battle.Mode.TOURNAMENT, blind=True)
    assert api(client, "get", f"/api/v1/comparisons/{battle.id}", token).status_code == 404
    assert api(client, "get", f"/api/v1/generations/{battle.left.id}", token).status_code == 404


def test_openapi_describes_the_comparison_endpoints(client):
    spec = client.get("/api/v1/openapi.json").json()
    assert {"/api/v1/comparisons", "/api/v1/comparisons/{id}", "/api/v1/comparisons/{id}/vote"} <= set(spec["paths"])
    assert spec["paths"]["/api/v1/comparisons/{id}/vote"]["post"]["requestBody"]["content"]["application/json"][
        "schema"]["properties"]["outcome"]["enum"] == ["left", "right", "tie", "both_bad"]
