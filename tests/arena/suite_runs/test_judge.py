"""The judge's prompt and how its answer is read (arena.suite_runs.judge): pure."""

import pytest

from arena.suite_runs import judge


@pytest.mark.parametrize("text, letter", [
    ('{"verdict": "A"}', "A"), ('{"verdict":"C"}', "C"), ("I pick [[B]].", "B"),
    ("[[A]] first, then on reflection [[B]]", "B"), ('{"verdict": "D"}', ""), ("Both fine.", ""), ("", ""),
])
def test_read_verdict(text, letter):
    assert judge.read_verdict(text) == letter


def test_verdicts_are_stated_in_the_pairs_own_terms():
    assert judge.verdict_for("left_first", '{"verdict": "A"}') == "left"
    assert judge.verdict_for("right_first", '{"verdict": "A"}') == "right"
    assert judge.verdict_for("right_first", '{"verdict": "B"}') == "left"
    assert judge.verdict_for("left_first", '{"verdict": "C"}') == "tie"
    assert judge.verdict_for("left_first", "no idea") == "tie"


def test_render_shows_the_reference_or_says_there_is_none():
    text = judge.render(judge.DEFAULT_TEMPLATE, question="Q?", first="FIRST-ANSWER", second="SECOND-ANSWER",
                        reference="REF")
    assert text.index("FIRST-ANSWER") < text.index("SECOND-ANSWER") and "REF" in text
    assert '{"verdict": "A"}' in text
    assert judge.NO_REFERENCE in judge.render(judge.DEFAULT_TEMPLATE, question="Q?", first="1", second="2")


def test_the_default_template_is_valid_and_versions_name_the_text():
    assert judge.template_problem(judge.DEFAULT_TEMPLATE) == ""
    assert judge.template_version("a") == judge.template_version("a") != judge.template_version("b")
    assert 0 < judge.template_version(judge.DEFAULT_TEMPLATE) < 2**31


@pytest.mark.parametrize("template, problem", [
    ("{question} {answer_a}", "must show {answer_b}"),
    ("{question} {answer_a} {answer_b} {x}", "unknown placeholders: {x}"),
    ("{question} {answer_a} {answer_b} {", "broken placeholder"),
    ("{question} {answer_a} {answer_b}" + "x" * 9000, "longer than"),
])
def test_template_problems(template, problem):
    assert problem in judge.template_problem(template)
