"""The rules' pure core (arena.categories.rules) and the classifier's question and reply
(arena.categories.classifier)."""

import time

from hypothesis import given
from hypothesis import strategies as st

from arena.categories import classifier, rules
from arena.categories.rules import Rule

CODING = Rule(1, "coding", rules.KEYWORDS, "python, stack trace, function")
SUPPORT = Rule(2, "support replies", rules.REGEX, r"(?i)\b(refund|my order)\b")
TAGGED = Rule(3, "maths", rules.TAG, "Maths")


def test_keywords_match_whole_words_case_ignored():
    assert rules.first_match([CODING], "Write a PYTHON function", []).rule is CODING
    assert rules.first_match([CODING], "Here is a stack trace:", []).rule is CODING
    assert rules.first_match([CODING], "pythonic dysfunctional prose", []) is None


def test_the_first_matching_rule_in_order_wins():
    prompt = "My order broke my python install"
    assert rules.first_match([CODING, SUPPORT], prompt, []).rule is CODING
    assert rules.first_match([SUPPORT, CODING], prompt, []).rule is SUPPORT


def test_a_tag_rule_matches_a_prompt_tag_case_ignored():
    assert rules.first_match([CODING, TAGGED], "2 + 2?", ["maths"]).rule is TAGGED
    assert rules.first_match([TAGGED], "maths", ["physics"]) is None


def test_a_pathological_regex_times_out_and_does_not_match_and_the_next_rule_still_does():
    evil = Rule(9, "never", rules.REGEX, r"(a+)+$")
    started = time.monotonic()
    match = rules.first_match([evil, CODING], "a" * 5000 + "b python", [])
    assert time.monotonic() - started < 8 * rules.REGEX_TIMEOUT_S  # `regex` stops near twice it
    assert match.rule is CODING and match.timed_out == (9,)


def test_unusable_rules_are_refused_in_words():
    for kind, value, words in [(rules.REGEX, "(", "Not a valid regex"), (rules.KEYWORDS, " , ,", "keyword"),
                               ("eval", "x", "one of"), (rules.TAG, "", "needs a value"),
                               (rules.REGEX, "x" * 1001, "at most")]:
        try:
            rules.compile_rule(kind, value)
        except rules.RuleError as exc:
            assert words in str(exc)
        else:
            raise AssertionError(f"{kind} {value!r} was accepted")


@given(st.text(max_size=200), st.lists(st.text(max_size=10), max_size=3))
def test_a_match_is_always_one_of_the_rules_and_the_first_that_matches_alone(prompt, tags):
    chain = [CODING, SUPPORT, TAGGED]
    match = rules.first_match(chain, prompt, tags)
    alone = [r for r in chain if rules.first_match([r], prompt, tags)]
    assert (match.rule if match else None) == (alone[0] if alone else None)


def test_the_classifier_is_constrained_to_exactly_the_names_or_none():
    names = ["coding", "support replies"]
    schema = classifier.params(names)["json_schema"]
    assert schema["properties"]["category"]["enum"] == ["coding", "support replies", "none"]
    assert classifier.read('{"category": "coding"}', names) == "coding"
    assert classifier.read('{"category": "none"}', names) is None
    assert classifier.read("not json", names) is None
    question = classifier.question("x" * 5000, [("coding", "code"), ("support replies", "")])
    assert "- coding: code" in question and "- support replies" in question and len(question) < 2000
