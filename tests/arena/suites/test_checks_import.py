"""Checks arriving with a suite: per prompt in JSONL, CSV and the API, a suite's defaults in the
API and the browser's form; a bad one is refused at import naming the prompt's place, the
check's index and the reason, and nothing is saved."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from arena.suites import parsing
from arena.suites.models import Suite
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api

pytestmark = pytest.mark.django_db

GOOD = [{"type": "contains", "value": "Paris", "ignore_case": True}, {"type": "words", "max": 20, "weight": 2}]


def problems(parse, *args) -> list[str]:
    with pytest.raises(parsing.SuiteError) as refused:
        parse(*args)
    return refused.value.problems


def test_jsonl_carries_each_prompts_checks_and_names_a_bad_one():
    lines = [{"prompt": "Capital of France?", "checks": GOOD},
             {"prompt": "Digits?", "checks": [{"type": "is_json"}, {"type": "regex", "value": "(\\d+"}]}]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    assert problems(parsing.parse_jsonl, data) == [
        "line 2: checks: check 1: regex: not a valid regex: missing ) at position 4"]
    [spec] = parsing.parse_jsonl(json.dumps(lines[0]).encode())
    assert spec.checks == GOOD


def test_csv_checks_column_holds_json():
    good = 'prompt,reference,checks\nCapital?,Paris,"[{""type"": ""similar"", ""threshold"": 0.4}]"\n'
    [spec] = parsing.parse_csv(good.encode())
    assert spec.checks == [{"type": "similar", "threshold": 0.4}] and spec.reference == "Paris"
    bad = ('prompt,checks\nOne?,"[{""type"": ""words"", ""min"": -3}]"\nTwo?,not json\n'
           'Three?,"[{""type"": ""similar""}]"\n')
    assert problems(parsing.parse_csv, bad.encode()) == [
        "line 2: checks: check 0: words: 'min' must be at least 0, not -3",
        "line 3: checks is not valid JSON: Expecting value: line 1 column 1 (char 0)",
        ("line 4: checks: check 0: similar compares the answer with the prompt's reference: give the prompt a "
        "'reference'")]


def test_default_checks_are_refused_naming_the_check_and_a_prompt_without_a_reference():
    prompts = parsing.api_items([{"prompt": "One?", "reference": "1"}, {"prompt": "Two?"}])
    assert parsing.check_defaults(GOOD, prompts) == GOOD and parsing.check_defaults(None, prompts) == []
    with pytest.raises(parsing.SuiteError) as refused:
        parsing.check_defaults([{"type": "ttft"}, {"type": "similar"}], prompts)
    assert refused.value.problems == ["default_checks: check 0: ttft: give 'min', 'max' or both"]
    with pytest.raises(parsing.SuiteError) as refused:
        parsing.check_defaults([{"type": "is_json"}, {"type": "similar"}], prompts)
    assert refused.value.problems == [("default_checks: check 1: similar compares each answer with its prompt's "
                                      "reference, and prompt 2 has none")]


def test_the_api_takes_default_and_prompt_checks_and_refuses_bad_ones(client, token):
    body = {"name": "Checked", "default_checks": [{"type": "ttft", "max": 2}],
            "prompts": [{"prompt": "Capital of France?", "checks": GOOD}, {"prompt": "Say hi"}]}
    created = api(client, "post", "/api/v1/suites", token, body)
    assert created.status_code == 201, created.content
    data = created.json()
    assert data["default_checks"] == [{"type": "ttft", "max": 2}]
    assert [p["checks"] for p in data["prompts"]] == [GOOD, []]
    assert_conforms(data, "/api/v1/suites", "post", 201)
    assert Suite.objects.get().default_checks == [{"type": "ttft", "max": 2}]

    bad_prompt = api(client, "post", "/api/v1/suites", token,
                     {**body, "prompts": [{"prompt": "x"}, {"prompt": "y", "checks": [{"type": "json_schema",
                                                                                       "value": {"type": 3}}]}]})
    assert bad_prompt.status_code == 400
    assert bad_prompt.json()["error"]["fields"]["prompts"].startswith(
        "prompts[1]: checks: check 0: json_schema: not a valid JSON schema (at type): 3 is not valid")
    bad_default = api(client, "post", "/api/v1/suites", token,
                      {**body, "default_checks": [{"type": "rubric", "value": "Polite.", "judge": "no-such-judge"}]})
    assert bad_default.status_code == 400
    assert bad_default.json()["error"]["fields"]["default_checks"] == (
        "default_checks: check 0: rubric: the judge 'no-such-judge' is not a catalogue entry (name a judge by its "
        "catalogue slug)")
    assert Suite.objects.count() == 1  # nothing more saved


def test_the_form_takes_default_checks_as_json_and_the_page_lists_them(mine, owner):
    response = mine.post("/suites/new/", {"name": "Typed", "prompts": "Name a colour.",
                                          "default_checks": json.dumps(GOOD)})
    assert response.status_code == 302
    created = Suite.objects.get()
    assert created.default_checks == GOOD
    html = mine.get(created.get_absolute_url()).content.decode()
    assert "Checks of every answer" in html
    assert "contains: contains &quot;Paris&quot; (any case)" in html and "words: at most 20 words · weight 2" in html


def test_the_form_refuses_bad_default_checks_and_saves_nothing(mine):
    for text, problem in [("[{", "Not valid JSON: Expecting property name enclosed in double quotes"),
                          ('[{"type": "words", "max": -1}]', ("default_checks: check 0: words: 'max' must be at least "
                                                             "0, not -1"))]:
        response = mine.post("/suites/new/", {"name": "Typed", "prompts": "Name a colour.", "default_checks": text})
        assert response.status_code == 400
        assert problem in response.content.decode().replace("&#x27;", "'")
    upload = mine.post("/suites/upload/", {"name": "Up", "default_checks": '[{"type": "similar"}]',
                                           "file": SimpleUploadedFile("s.jsonl", b'{"prompt": "Hi"}\n')})
    assert upload.status_code == 400
    assert "prompt 1 has none" in upload.content.decode()
    assert not Suite.objects.exists()


def test_an_uploaded_prompts_checks_show_on_its_page(mine):
    line = {"prompt": "Capital?", "reference": "Paris", "checks": [{"type": "similar", "threshold": 0.6,
                                                                     "name": "close to Paris"}]}
    response = mine.post("/suites/upload/", {"name": "Up", "file": SimpleUploadedFile(
        "s.jsonl", json.dumps(line).encode())})
    assert response.status_code == 302
    html = mine.get(response["Location"]).content.decode()
    assert "Checks of each answer" in html and "close to Paris: chrF ≥ 0.6 against the reference" in html
