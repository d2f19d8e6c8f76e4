"""`inference.structured`: a JSON schema or regex checked before any work, answers judged
after; and `SamplingParams` carrying the constraint over the job's JSON."""

import json

import pytest

from inference.protocol import Job, ParamError, SamplingParams
from inference.structured import BOTH_GIVEN, answer_valid, constraint_problem, engine_problem

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
}


@pytest.mark.parametrize("schema", [PERSON, {"type": "array", "items": {"enum": [1, 2]}}, {"type": "boolean"}, {}])
def test_valid_schemas_pass(schema):
    assert constraint_problem(schema, None) is None


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "foo"}, "Not a valid JSON schema (at type)"),
        ({"properties": {"a": {"minimum": "x"}}}, "Not a valid JSON schema (at properties/a/minimum)"),
        ([1, 2], "must be a JSON object"),
        ({"type": "string", "format": "weird"}, "cannot constrain decoding: Unknown format: weird"),
    ],
)
def test_invalid_schemas_are_refused_with_the_reason(schema, words):
    assert words in constraint_problem(schema, None)


@pytest.mark.parametrize(("regex", "words"), [
    ("a(b", "Not a valid regex: missing ), unterminated subpattern at position 1."),
    ("(?=a)b", "cannot constrain decoding: look-around, including look-ahead and look-behind, is not supported"),
    (r"(a)\1", "cannot constrain decoding: backreferences are not supported"),
    ("", "must be a non-empty string"),
    (7, "must be a non-empty string"),
])
def test_invalid_regexes_are_refused_with_the_reason(regex, words):
    assert words in constraint_problem(None, regex)


def test_one_constraint_at_most():
    assert constraint_problem(PERSON, "a+") == BOTH_GIVEN
    assert constraint_problem(None, None) is None


def test_answers_are_judged_against_their_constraint():
    assert answer_valid('{"name": "Ada", "age": 36}', PERSON)
    assert not answer_valid('{"name": "Ada"}', PERSON)
    assert not answer_valid('```json\n{"name": "Ada", "age": 36}\n```', PERSON)
    assert not answer_valid('{"name": "Ada", "age": -1}', PERSON)
    assert answer_valid("2024-01-31", None, r"\d{4}-\d{2}-\d{2}")
    assert not answer_valid("2024-01-31 ", None, r"\d{4}-\d{2}-\d{2}")  # a full match, not a search


def test_regex_is_refused_where_the_engine_cannot_enforce_it():
    assert engine_problem("openai", None, "a+") and engine_problem("server", None, "a+")
    assert engine_problem("transformers", None, "a+") is None and engine_problem("llamacpp", None, "a+") is None
    assert engine_problem("openai", PERSON, None) is None


def test_params_carry_the_constraint_through_a_job():
    params = SamplingParams.from_dict({"temperature": 0, "json_schema": PERSON})
    job = Job.from_json(Job("g", [{"role": "user", "content": "hi"}], params).to_json())
    assert job.params.json_schema == PERSON and job.params.regex is None and job.params.constrained
    assert SamplingParams.from_dict(params.to_dict()) == params
    assert "json_schema" not in SamplingParams().to_dict()  # unconstrained params keep their old shape
    assert not SamplingParams().constrained


@pytest.mark.parametrize(("data", "field", "words"), [
    ({"json_schema": {"type": "foo"}}, "json_schema", "Not a valid JSON schema"),
    ({"json_schema": "{}"}, "json_schema", "must be a JSON object"),
    ({"regex": "a("}, "regex", "Not a valid regex"),
    ({"regex": "a", "json_schema": {}}, "json_schema", BOTH_GIVEN),
])
def test_params_refuse_a_bad_constraint(data, field, words):
    with pytest.raises(ParamError) as caught:
        SamplingParams.from_dict(data)
    assert words in caught.value.errors[field]


def test_a_huge_schema_is_refused():
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(2000)}}
    assert "too long" in constraint_problem(json.loads(json.dumps(schema)), None)
