"""The checks of an answer (arena.suites.checks): each kind passes, fails, and refuses a bad spec
with a sentence; `not`, weights, thresholds and names; a pathological regex stops in time."""

from __future__ import annotations

import time

import pytest

from arena.suites import checks
from arena.suites.checks import Answer, CheckError

MEASURED = {"ttft_s": 0.4, "tokens_per_s": 35.0, "total_time_s": 2.5, "generated_tokens": 42}
REFERENCE = "The refund window is thirty days from delivery."


def run(spec: dict, text: str, reference: str = REFERENCE, metrics: dict | None = None) -> checks.Result:
    [result] = checks.evaluate([checks.parse(spec)], Answer(text, reference, MEASURED if metrics is None else metrics))
    return result


# (spec, an answer it passes, an answer it fails, a word of what the failure says it got)
KINDS = [
    ({"type": "equals", "value": "Paris"}, "  Paris\n", "Paris, France", '"Paris, France"'),
    ({"type": "equals", "value": "paris", "ignore_case": True}, "PARIS", "Lyon", '"Lyon"'),
    ({"type": "contains", "value": "refund window", "ignore_case": True}, "Our Refund Window is long.",
     "We refund.", 'missing "refund window"'),
    ({"type": "contains", "value": ["30 days", "thirty days"], "mode": "any"}, "within thirty days",
     "within a month", "none found"),
    ({"type": "contains", "value": ["30 days", "refund"]}, "a refund within 30 days", "a refund soon",
     'missing "30 days"'),
    ({"type": "contains", "value": "Refund"}, "Refund now", "refund now", 'missing "Refund"'),
    ({"type": "not_contains", "value": ["As an AI", "I cannot"], "ignore_case": True}, "Sure: 42.",
     "as an ai, I think", 'found "As an AI"'),
    ({"type": "starts_with", "value": "Dear"}, "\n Dear Ms Smith,", "Hello Ms Smith", 'starts "Hello Ms Smith"'),
    ({"type": "regex", "value": r"^\d+$"}, "1234", "12 34", "no match"),
    ({"type": "regex", "value": "paris", "ignore_case": True}, "It is PARIS.", "It is Lyon.", "no match"),
    ({"type": "is_json"}, ' {"city": "Paris"} ', "city: Paris", "not JSON"),
    ({"type": "json_schema", "value": {"type": "object", "required": ["city"],
                                       "properties": {"city": {"type": "string"}}}},
     '{"city": "Paris"}', '{"city": 3}', "at city: 3 is not of type 'string'"),
    ({"type": "words", "min": 2, "max": 4}, "three little words", "one", "1 words"),
    ({"type": "tokens", "max": 50}, "whatever", None, "42 tokens"),
    ({"type": "number", "value": 42, "tolerance": 0.5}, "The answer is 42.4", "The answer is 43", "43"),
    ({"type": "number", "value": 1234.5}, "Total: 1,234.5 euros", "no idea", "no number"),
    ({"type": "similar", "threshold": 0.5}, "The refund window is thirty days from the delivery.",
     "Bananas are yellow.", "chrF 0."),
    ({"type": "ttft", "max": 1.0}, "x", None, "0.4 s"),
    ({"type": "tokens_per_s", "min": 20}, "x", None, "35 tokens/s"),
    ({"type": "total_time", "max": 10}, "x", None, "2.5 s"),
]


@pytest.mark.parametrize(("spec", "passing", "failing", "got"), KINDS, ids=lambda v: v.get("type") if
                         isinstance(v, dict) else None)
def test_each_kind_passes_and_fails_naming_what_it_expected_and_got(spec, passing, failing, got):
    passed = run(spec, passing)
    assert passed.passed, passed
    assert passed.score == 1.0 or spec["type"] == "similar"
    assert passed.name == spec["type"] and passed.expected and not passed.error
    if failing is None:  # a measure: the same answer fails a bound it does not meet
        failed = run({**spec, "max": 0.0001} if "max" in spec else {**spec, "min": 1e6}, passing)
    else:
        failed = run(spec, failing)
    assert not failed.passed and failed.score < (spec.get("threshold") or 1), failed
    assert got in failed.got, (failed, got)


def test_a_measure_that_was_not_taken_fails_with_a_reason_even_negated():
    for spec in ({"type": "ttft", "max": 1}, {"type": "ttft", "max": 1, "not": True}):
        result = run(spec, "x", metrics={})
        assert not result.passed and result.got == "not evaluated"
        assert result.error == "no time to first token was measured for this answer"


def test_similar_needs_a_reference_and_scores_chrf_against_the_threshold():
    assert run({"type": "similar"}, "anything", reference="").error == \
        "the prompt has no reference answer to compare with"
    close = run({"type": "similar", "threshold": 0.95}, "The refund window is thirty days from the delivery.")
    assert 0.6 < close.score < 0.99 and not close.passed  # scored, below a high bar
    assert run({"type": "similar", "threshold": 0.6}, "The refund window is thirty days from the delivery.").passed
    assert close.expected == "chrF ≥ 0.95 against the reference"


def test_not_negates_any_check_and_names_it_so():
    result = run({"type": "contains", "value": "sorry", "not": True}, "I am sorry.")
    assert not result.passed and result.name == "not_contains" and result.expected == 'not contains "sorry"'
    assert run({"type": "is_json", "not": True}, "plain words").passed
    negated_score = run({"type": "similar", "not": True, "threshold": 0.5}, "Bananas are yellow.")
    assert negated_score.passed and negated_score.score > 0.5  # 1 - a low similarity


def test_weights_make_the_score_and_every_check_must_pass():
    specs = [{"type": "contains", "value": "Paris", "weight": 3, "name": "names the city"},
             {"type": "words", "max": 2, "name": "brief"}]
    results = checks.evaluate(checks.parse_all(specs), Answer("Paris is the capital"))
    assert [(r.name, r.passed) for r in results] == [("names the city", True), ("brief", False)]
    verdict = checks.verdict(results)
    assert not verdict.passed and verdict.score == pytest.approx(0.75) and verdict.failed == ("brief",)
    assert checks.verdict([]) == checks.Verdict(True, 1.0, ())


def test_a_pathological_regex_fails_within_its_time_limit_instead_of_hanging():
    check = checks.parse({"type": "regex", "value": "(a+)+$"})
    started = time.monotonic()
    [result] = checks.evaluate([check], Answer("a" * 5000 + "b"))
    elapsed = time.monotonic() - started
    assert not result.passed and "took longer than 0.25 s" in result.error
    assert elapsed < 8 * checks.REGEX_TIMEOUT_S  # the `regex` module stops near twice its timeout


@pytest.mark.parametrize(("spec", "problem"), [
    ("contains", "a check must be a JSON object with a 'type'"),
    ({"value": "x"}, "unknown type None"),
    ({"type": {"a": 1}}, "unknown type {'a': 1}"),  # found by the API's fuzzer: not a string, not hashable
    ({"type": "llm"}, "unknown type 'llm' (known: equals, contains,"),
    ({"type": "rubric"}, "rubric: 'value' (the rubric the judge grades the answer against) must be a non-empty"),
    ({"type": "contains"}, "contains: 'value' must be a non-empty string or a list of them"),
    ({"type": "contains", "value": []}, "contains: 'value' must be a non-empty string or a list of them"),
    ({"type": "contains", "value": "x", "mode": "some"}, "contains: 'mode' is 'all' or 'any', not 'some'"),
    ({"type": "equals", "value": "x", "ignore_case": "yes"}, "equals: 'ignore_case' must be true or false"),
    ({"type": "regex", "value": "(unclosed"}, "regex: not a valid regex: missing )"),
    ({"type": "json_schema", "value": {"type": "integer", "minimum": "zero"}},
     "json_schema: not a valid JSON schema (at minimum): 'zero' is not of type 'number'"),
    ({"type": "json_schema", "value": "object"}, "json_schema: 'value' must be a JSON Schema (a JSON object)"),
    ({"type": "words", "min": -1}, "words: 'min' must be at least 0, not -1"),
    ({"type": "words"}, "words: give 'min', 'max' or both"),
    ({"type": "tokens", "min": 10, "max": 5}, "tokens: 'min' (10) is above 'max' (5)"),
    ({"type": "number", "tolerance": 1}, "number: 'value' (the expected number) is missing"),
    ({"type": "number", "value": "42"}, "number: 'value' must be a number, not '42'"),
    ({"type": "similar", "metric": "bleu"}, "similar: 'metric' is one of chrf, not 'bleu'"),
    ({"type": "similar", "threshold": 1.5}, "similar: 'threshold' must be at most 1, not 1.5"),
    ({"type": "words", "max": 5, "threshold": 0.5}, "words: 'threshold' applies only to a check with a score"),
    ({"type": "ttft", "max": 1, "weight": 0}, "ttft: 'weight' must be above 0"),
    ({"type": "ttft", "max": 1, "weight": -2}, "ttft: 'weight' must be at least 0, not -2"),
    ({"type": "ttft", "max": 1, "not": 1}, "ttft: 'not' must be true or false, not 1"),
    ({"type": "ttft", "max": 1, "name": ""}, "ttft: 'name' must be a non-empty string"),
    ({"type": "ttft", "max": 1, "eval": "1+1"}, "ttft: unknown field(s) 'eval'"),
])
def test_a_bad_spec_is_refused_with_a_sentence(spec, problem):
    with pytest.raises(CheckError) as refused:
        checks.parse(spec)
    assert str(refused.value).startswith(problem), str(refused.value)


def test_problems_name_every_bad_check_by_its_index():
    specs = [{"type": "is_json"}, {"type": "regex", "value": "["}, {"type": "nope"}]
    assert checks.problems(specs) == [
        "check 1: regex: not a valid regex: unterminated character set at position 1",
        "check 2: unknown type 'nope' (known: " + ", ".join(checks.TYPES) + ")"]
    assert checks.problems("is_json") == ["must be a list of check objects"]
    assert checks.problems([{"type": "is_json"}] * (checks.MAX_CHECKS + 1)) == [
        f"at most {checks.MAX_CHECKS} checks, not {checks.MAX_CHECKS + 1}"]
    assert checks.problems(None) == [] and checks.parse_all(None) == []


def test_a_check_in_words():
    assert checks.describe({"type": "words", "max": 150, "weight": 2}) == "words: at most 150 words · weight 2"
    assert checks.describe({"type": "contains", "value": ["a", "b"], "mode": "any", "name": "either"}) == \
        'either: contains any of "a", "b"'
    assert checks.describe({"type": "tokens", "min": 1}) == "tokens: at least 1 token"
    assert checks.describe({"type": "nope"}).startswith("not a check now: unknown type 'nope'")
