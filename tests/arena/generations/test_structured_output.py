"""Structured output on the Django side: a JSON schema or regex given in the playground, a
comparison, a tournament, the JSON API or the OpenAI-compatible API; refused with a clear
message before any Generation row or job exists when it is invalid (or a regex where the
engine cannot enforce one); each finished answer marked valid or not, shown on its page
and as a rate per model on the leaderboard."""

import json

import pytest
from django.urls import reverse

from arena.catalogue.models import ModelEntry
from arena.generations.models import Generation
from arena.leaderboard.validity import rates
from arena.tournaments.models import Tournament
from tests.arena.api_client import api

pytestmark = pytest.mark.django_db

SCHEMA = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}, "required": ["answer"]}
BAD_SCHEMA = {"type": "objekt"}


@pytest.fixture
def endpoint_entry(catalogue):
    return ModelEntry.objects.create(slug="remote", name="Remote model", engine="openai",
                                     base_url="http://127.0.0.1:9/v1", remote_model="m", enabled=True)


def nothing_started():
    return not Generation.objects.exists()


# --- forms ---------------------------------------------------------------------------------
def test_the_playground_passes_a_schema_to_the_generation(client, owner, smollm, django_capture_on_commit_callbacks):
    client.force_login(owner)
    with django_capture_on_commit_callbacks():
        client.post(reverse("playground"), {"model": smollm.slug, "prompt": "Yes?", "json_schema": json.dumps(SCHEMA)})
    assert Generation.objects.get().params["json_schema"] == SCHEMA


@pytest.mark.parametrize(("data", "field", "words"), [
    ({"json_schema": "{not json"}, "json_schema", "Not valid JSON"),
    ({"json_schema": json.dumps(BAD_SCHEMA)}, "json_schema", "Not a valid JSON schema (at type)"),
    ({"regex": "a(b"}, "regex", "Not a valid regex: missing ), unterminated subpattern"),
    ({"regex": "(?<=a)b"}, "regex", "look-around"),
    ({"regex": "a+", "json_schema": json.dumps(SCHEMA)}, "json_schema", "not both"),
])
def test_the_playground_refuses_a_bad_constraint_before_anything_starts(client, owner, smollm, data, field, words):
    client.force_login(owner)
    response = client.post(reverse("playground"), {"model": smollm.slug, "prompt": "Hi", **data})
    assert response.status_code == 400 and words in str(response.context["form"].errors[field])
    assert nothing_started()


def test_a_regex_is_refused_for_an_openai_endpoint(client, owner, endpoint_entry):
    client.force_login(owner)
    response = client.post(reverse("playground"), {"model": "remote", "prompt": "Hi", "regex": "a+"})
    assert "Remote model: This model is served by an OpenAI-compatible endpoint" in str(response.context["form"].errors)
    assert nothing_started()


def test_the_comparison_form_constrains_both_sides(client, owner, catalogue, django_capture_on_commit_callbacks):
    client.force_login(owner)
    form = {"left_model": catalogue[0].slug, "right_model": catalogue[1].slug, "prompt": "Date?"}
    bad = client.post(reverse("compare"), {**form, "regex": "(a"})
    assert "Not a valid regex" in bad.content.decode() and nothing_started()
    with django_capture_on_commit_callbacks():
        client.post(reverse("compare"), {**form, "regex": r"\d{4}"})
    assert [g.params["regex"] for g in Generation.objects.all()] == [r"\d{4}", r"\d{4}"]


def test_the_tournament_form_takes_and_checks_a_constraint(client, owner, catalogue):
    client.force_login(owner)
    form = {"seeding": "given", "prompt": "Yes or no?", "temperature": "0.7", "max_new_tokens": "16",
            **{f"contestant_{i + 1}": m.slug for i, m in enumerate(catalogue[:4])}}
    bad = client.post(reverse("tournament-new"), {**form, "json_schema": json.dumps(BAD_SCHEMA)})
    assert "Not a valid JSON schema" in bad.content.decode() and not Tournament.objects.exists()
    client.post(reverse("tournament-new"), {**form, "json_schema": json.dumps(SCHEMA)})
    assert Tournament.objects.get().params["json_schema"] == SCHEMA


# --- the JSON API and the OpenAI-compatible API ------------------------------------------------
@pytest.mark.parametrize(("params", "field", "words"), [
    ({"json_schema": BAD_SCHEMA}, "json_schema", "Not a valid JSON schema"),
    ({"json_schema": "{}"}, "json_schema", "must be a JSON object"),
    ({"regex": "a("}, "regex", "Not a valid regex"),
])
def test_the_api_refuses_a_bad_constraint_with_a_400(client, token, smollm, params, field, words):
    response = api(client, "post", "/api/v1/generations", token, {"model": smollm.slug, "prompt": "Hi",
                                                                   "params": params})
    assert response.status_code == 400 and words in response.json()["error"]["fields"][field]
    comparison = api(client, "post", "/api/v1/comparisons", token,
                     {"left_model": smollm.slug, "right_model": smollm.slug, "prompt": "Hi", "params": params})
    assert comparison.status_code == 400 and words in comparison.json()["error"]["message"]
    assert nothing_started()


def test_the_api_refuses_a_regex_for_an_endpoint_and_takes_a_schema(client, token, endpoint_entry,
                                                                   django_capture_on_commit_callbacks):
    body = {"model": "remote", "prompt": "Hi", "params": {"regex": "a+"}}
    refused = api(client, "post", "/api/v1/generations", token, body)
    assert refused.status_code == 400 and "OpenAI-compatible endpoint" in refused.json()["error"]["message"]
    assert nothing_started()
    with django_capture_on_commit_callbacks():
        taken = api(client, "post", "/api/v1/generations", token, {**body, "params": {"json_schema": SCHEMA}})
    assert taken.status_code == 202 and taken.json()["params"]["json_schema"] == SCHEMA


@pytest.mark.parametrize(("response_format", "words"), [
    ({"type": "json_schema", "json_schema": {"name": "a", "schema": BAD_SCHEMA}}, "Not a valid JSON schema"),
    ({"type": "json_schema", "json_schema": {"name": "a"}}, "expected an object with a 'schema' object"),
    ({"type": "grammar"}, "expected 'text', 'json_object' or 'json_schema'"),
])
def test_the_openai_api_refuses_a_bad_response_format(client, token, smollm, response_format, words):
    response = api(client, "post", "/v1/chat/completions", token,
                   {"model": smollm.slug, "messages": [{"role": "user", "content": "Hi"}],
                    "response_format": response_format})
    assert response.status_code == 400 and words in response.json()["error"]["message"]
    assert response.json()["error"]["param"].startswith("response_format")
    assert nothing_started()


def test_openai_response_formats_become_schemas():
    from arena.openai_compat.translate import sampling_overrides

    strict = {"type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA, "strict": True}}
    assert sampling_overrides({"response_format": strict})[0] == {"json_schema": SCHEMA}
    assert sampling_overrides({"response_format": {"type": "json_object"}})[0] == {"json_schema": {"type": "object"}}
    assert sampling_overrides({"response_format": {"type": "text"}})[0] == {}


# --- validity: recorded, shown, counted ------------------------------------------------------
def finished(owner, model, params, text) -> Generation:
    gen = Generation.objects.create(owner=owner, model=model, prompt="Q", params=params)
    gen.finish(Generation.Status.DONE, text=text, finish_reason="stop")
    return gen


def test_validity_is_recorded_with_the_outcome(owner, smollm):
    assert finished(owner, smollm, {"json_schema": SCHEMA}, '{"answer": "yes"}').output_valid is True
    assert finished(owner, smollm, {"json_schema": SCHEMA}, '```json\n{"answer": "yes"}\n```').output_valid is False
    assert finished(owner, smollm, {"regex": "[0-9]+"}, "42").output_valid is True
    assert finished(owner, smollm, {}, "anything").output_valid is None
    stopped = Generation.objects.create(owner=owner, model=smollm, prompt="Q", params={"regex": "[0-9]+"})
    stopped.finish(Generation.Status.CANCELLED, text="4")
    assert stopped.output_valid is None  # a cut answer is not judged


def test_the_generation_page_says_whether_the_answer_follows_its_schema(client, owner, smollm):
    client.force_login(owner)
    good = finished(owner, smollm, {"json_schema": SCHEMA}, '{"answer": "no"}')
    bad = finished(owner, smollm, {"regex": "[0-9]+"}, "forty-two")
    assert "Valid JSON for the schema" in client.get(good.get_absolute_url()).content.decode()
    assert "Does not match the regex" in client.get(bad.get_absolute_url()).content.decode()


def test_the_leaderboard_shows_each_models_validity_rate(client, owner, catalogue):
    smollm, other = catalogue[0], catalogue[1]
    for text in ('{"answer": "yes"}', '{"answer": "yes"}', "yes"):
        finished(owner, smollm, {"json_schema": SCHEMA}, text)
    finished(owner, other, {"regex": "[0-9]+"}, "7")
    finished(owner, other, {}, "unjudged")
    assert [(r["model"], r["valid"], r["total"]) for r in rates()] == [(other.slug, 1, 1), (smollm.slug, 2, 3)]
    client.force_login(owner)
    html = client.get(reverse("leaderboard")).content.decode()
    assert 'id="validity"' in html and "2 of 3" in html and "67%" in html
