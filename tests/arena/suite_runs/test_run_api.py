"""The suite-run endpoints: start one, list mine, read one, cancel it; every refusal names the field."""

import uuid

import pytest

from arena.accounts.models import ApiToken
from arena.catalogue.defaults import DEFAULT_ENTRIES
from arena.catalogue.models import ModelEntry
from arena.suite_runs import judge, runner
from arena.suite_runs.models import SuiteRun
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import suite
from tests.arena.suite_runs.running import run_to_end

pytestmark = pytest.mark.django_db


@pytest.fixture
def mine(owner):
    return suite(owner, "One?", {"prompt": "Capital of France?", "regex": "^[A-Z][a-z]+$"})


def body(mine, catalogue, **change) -> dict:
    return {"suite": str(mine.id), "contestants": [m.slug for m in catalogue[:3]], **change}


def start(client, token, data):
    return api(client, "post", "/api/v1/suite-runs", token, data)


def test_start_a_run(client, token, mine, catalogue):
    data = body(mine, catalogue, format="knockout", judge=catalogue[3].slug, params={"temperature": 0.2, "top_p": None})
    created = start(client, token, data)
    assert created.status_code == 201, created.content
    run_data = created.json()
    assert created["Location"] == f"/api/v1/suite-runs/{run_data['id']}"
    assert_conforms(run_data, "/api/v1/suite-runs", "post", 201)
    assert (run_data["suite"], run_data["format"], run_data["judge"], run_data["state"]) == (
        str(mine.id), "knockout", catalogue[3].slug, "running")
    assert run_data["progress"] == {"done": 0, "total": 0, "percent": 0, "eta_s": None}
    assert [r["model"] for r in run_data["results"]] == data["contestants"]
    run = SuiteRun.objects.get(id=run_data["id"])
    # No limit asked: the run's one limit for every answer (ARENA_BLIND_MAX_NEW_TOKENS), not each contestant's.
    assert run.contestants == catalogue[:3] and run.params == {"temperature": 0.2, "max_new_tokens": 256}
    assert run.judge_template == judge.DEFAULT_TEMPLATE


def test_the_defaults_a_round_robin_judged_by_people(client, token, mine, catalogue):
    created = start(client, token, body(mine, catalogue, format=None, judge=None, judge_template=None))
    assert created.status_code == 201, created.content
    assert (created.json()["format"], created.json()["judge"]) == ("round_robin", None)


@pytest.fixture
def disabled(catalogue):
    return ModelEntry.objects.create(**{**DEFAULT_ENTRIES[0], "slug": "smollm2-disabled", "enabled": False})


@pytest.mark.parametrize(("change", "field", "message"), [
    ({"suite": None}, "suite", "suite is required"),
    ({"contestants": []}, "contestants", "Pick 1 to 16 contestants, not 0."),
    ({"contestants": ["smollm2-135m"] * 17}, "contestants", "contestants must be a list of 1 to 16 catalogue slugs"),
    ({"contestants": "smollm2-135m"}, "contestants", "contestants must be a list"),
    ({"contestants": ["smollm2-135m", "nope"]}, "contestants", "no enabled catalogue model has the slug 'nope'"),
    ({"contestants": ["smollm2-135m", "smollm2-disabled"]}, "contestants", "no enabled catalogue model"),
    ({"contestants": ["smollm2-135m", 5]}, "contestants", "no enabled catalogue model has the slug 5"),
    ({"contestants": ["smollm2-135m", "smollm2-135m"]}, "contestants", "Each contestant may appear only once."),
    ({"format": "elimination"}, "format", "round_robin, knockout, adaptive or swiss"),
    ({"format": "swiss", "judge": "smollm2-135m"}, "format", "A Swiss run needs 8 or more contestants, not 3"),
    ({"format": "swiss"}, "judge", "The swiss format chooses its pairs from a model judge's verdicts"),
    ({"format": "adaptive"}, "judge", "The adaptive format chooses its pairs from a model judge's verdicts"),
    ({"format": "adaptive", "judge": "smollm2-135m", "budget": 1}, "budget", "The budget is 2 to"),
    ({"format": "adaptive", "judge": "smollm2-135m", "budget": "half"}, "budget", "budget must be a whole number"),
    ({"format": "adaptive", "judge": "smollm2-135m", "budget": True}, "budget", "budget must be a whole number"),
    ({"judge": "smollm2-135m", "budget": 10}, "budget", "Only an adaptive run takes a budget."),
    ({"format": 1}, "format", "format must be a string."),
    ({"judge": "nope"}, "judge", "judge: no enabled catalogue model"),
    ({"judge": "smollm2-disabled"}, "judge", "judge: no enabled catalogue model"),
    ({"judge": "smollm2-135m", "judge_template": "Judge {question} {answer_a}"}, "judge_template", "{answer_b}"),
    ({"judge": "smollm2-135m", "judge_template": "{oops"}, "judge_template", "broken placeholder"),
    ({"judge_template": ["x"]}, "judge_template", "judge_template must be a string."),
    ({"judge_template": "{oops"}, "judge_template", "broken placeholder"),  # checked even without a judge
    ({"params": [1]}, "params", "params must be an object."),
    ({"params": {"seed": 1, "stop": ["x"]}}, "params", "unknown parameter(s) seed, stop"),
    ({"params": {"temperature": 9}}, "params", "temperature: must be between 0.0 and 2.0"),
    ({"params": {"max_new_tokens": "many"}}, "params", "max_new_tokens: must be a number"),
    ({"rounds": 3}, "rounds", "Unknown field(s): rounds."),
])
def test_every_refusal_names_the_field(client, token, mine, catalogue, disabled, change, field, message):
    response = start(client, token, body(mine, catalogue, **change))
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert message in error["message"] and list(error["fields"]) == [field]
    assert not SuiteRun.objects.exists()


def test_a_body_that_is_not_a_json_object_is_refused(client, token):
    for raw in ("", "[1]", "{"):
        response = api(client, "post", "/api/v1/suite-runs", token, raw=raw)
        assert response.status_code == 400 and response.json()["error"]["message"]


@pytest.mark.parametrize("suite_id", ["theirs", "00000000-0000-4000-8000-000000000000", "not-a-uuid", 5])
def test_a_suite_that_is_not_the_callers_is_not_found(client, token, outsider, catalogue, suite_id):
    if suite_id == "theirs":
        suite_id = str(suite(outsider).id)
    response = start(client, token, {"suite": suite_id, "contestants": ["smollm2-135m", "gemma-3-270m"]})
    assert response.status_code == 404 and response.json()["error"]["fields"] == {"suite": "No such suite."}
    assert not SuiteRun.objects.exists()


def test_a_contestant_that_cannot_follow_a_prompts_constraint_is_refused(client, token, mine, catalogue):
    endpoint = ModelEntry.objects.create(slug="remote", name="Remote", engine="openai", base_url="http://127.0.0.1:9/v1",
                                         remote_model="m", enabled=True)
    response = start(client, token, body(mine, catalogue, contestants=["smollm2-135m", endpoint.slug]))
    assert response.status_code == 400, response.content
    assert list(response.json()["error"]["fields"]) == ["contestants"]


def test_read_and_list_only_mine_newest_first(client, token, owner, outsider, mine, catalogue):
    first = start(client, token, body(mine, catalogue)).json()
    second = start(client, token, body(mine, catalogue, contestants=["smollm2-135m", "gemma-3-270m"])).json()
    read = api(client, "get", f"/api/v1/suite-runs/{first['id']}", token).json()
    assert read == first
    assert_conforms(read, "/api/v1/suite-runs/{id}")
    listed = api(client, "get", "/api/v1/suite-runs", token).json()
    assert [r["id"] for r in listed["suite_runs"]] == [second["id"], first["id"]]
    assert "results" not in listed["suite_runs"][0]
    assert_conforms(listed, "/api/v1/suite-runs")
    assert api(client, "get", "/api/v1/suite-runs", ApiToken.issue(outsider)).json() == {"suite_runs": []}


def test_cancel_then_409(client, token, mine, catalogue):
    run_id = start(client, token, body(mine, catalogue)).json()["id"]
    cancelled = api(client, "post", f"/api/v1/suite-runs/{run_id}/cancel", token)
    assert cancelled.status_code == 200, cancelled.content
    assert cancelled.json()["state"] == "cancelled" and cancelled.json()["finished_at"]
    assert_conforms(cancelled.json(), "/api/v1/suite-runs/{id}/cancel", "post")
    again = api(client, "post", f"/api/v1/suite-runs/{run_id}/cancel", token)
    assert again.status_code == 409 and "already ended (cancelled)" in again.json()["error"]["message"]


def test_a_step_that_began_before_the_cancel_does_not_revive_the_run(client, token, mine, catalogue):
    run_id = start(client, token, body(mine, catalogue)).json()["id"]
    stale = SuiteRun.objects.get(id=run_id)  # what a step read just before the cancel
    assert api(client, "post", f"/api/v1/suite-runs/{run_id}/cancel", token).status_code == 200
    runner.step(stale)
    assert SuiteRun.objects.get(id=run_id).state == "cancelled"


def test_results_once_the_run_is_driven_to_the_end(client, token, mine, catalogue):
    run_id = start(client, token, body(mine, catalogue, judge=catalogue[3].slug)).json()["id"]
    run_to_end(SuiteRun.objects.get(id=run_id), answer="Paris", verdict="A")
    data = api(client, "get", f"/api/v1/suite-runs/{run_id}", token).json()
    assert_conforms(data, "/api/v1/suite-runs/{id}")
    assert data["state"] == "done" and data["finished_at"] and data["progress"]["percent"] == 100
    assert data["progress"]["done"] == data["progress"]["total"] > 0 and data["progress"]["eta_s"] is None
    # Every answer "Paris (<slug>)": the regex ^[A-Z][a-z]+$ of prompt 2 is never followed; "A" in both orders: ties.
    assert data["results"] == [{"model": m.slug, "wins": 0, "losses": 0, "ties": 4, "answered": 2, "failed": 0,
                                "constrained": 1, "valid": 0, "validity_rate": 0.0} for m in catalogue[:3]]
    cancel = api(client, "post", f"/api/v1/suite-runs/{run_id}/cancel", token)
    assert cancel.status_code == 409 and "already ended (done)" in cancel.json()["error"]["message"]


def test_a_run_counts_against_the_request_rate(client, token, mine, catalogue, settings, redis_prefix):
    settings.ARENA_REDIS_PREFIX, settings.ARENA_RATE_LIMIT_PER_MIN = redis_prefix, 1
    assert start(client, token, body(mine, catalogue)).status_code == 201
    refused = start(client, token, body(mine, catalogue))
    assert refused.status_code == 429 and refused.json()["error"]["limit"] == "requests_per_minute"
    assert SuiteRun.objects.count() == 1


def test_anonymous_callers_get_401(client, mine, catalogue):
    run_id = uuid.uuid4()
    for method, path in (("post", "/api/v1/suite-runs"), ("get", "/api/v1/suite-runs"),
                         ("get", f"/api/v1/suite-runs/{run_id}"), ("post", f"/api/v1/suite-runs/{run_id}/cancel")):
        response = api(client, method, path, None, body(mine, catalogue) if method == "post" else None)
        assert response.status_code == 401, path
    assert not SuiteRun.objects.exists()
