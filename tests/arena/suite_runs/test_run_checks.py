"""A suite run's answers checked as they land (arena.suite_runs.checking.check_answers, from the
runner's step): results stored on each answer, a run that ends only once its answers are checked,
a pathological regex that cannot hold a step, a re-check against changed checks that generates
nothing, and the results on the run's page, in its API and in its exports. Runs are driven as in
test_runner.py; tests/live/test_suite_checks_browser.py runs one with real models."""

from __future__ import annotations

import csv
import io
import json
import math
import time

import pytest

from arena.generations.models import Generation
from arena.suite_runs import runner
from arena.suite_runs.actions import start_recheck, start_run
from arena.suite_runs.models import SuiteAnswer, SuiteRun
from arena.suites import checks, parsing
from arena.suites.actions import create_suite
from arena.suites.models import Suite
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import finish
from tests.arena.suite_runs.running import live, run_to_end

pytestmark = pytest.mark.django_db

DEFAULTS = [{"type": "contains", "value": "paris", "ignore_case": True, "name": "names Paris"},
            {"type": "ttft", "max": 1.0}]


def checked_suite(owner, *prompts: dict, defaults=DEFAULTS) -> Suite:
    specs = parsing.api_items(list(prompts) or [{"prompt": "Capital of France?",
                                                 "checks": [{"type": "words", "max": 3, "name": "brief"}]}])
    return create_suite(owner, name="Checked", prompts=specs, default_checks=parsing.check_defaults(defaults, specs))


def answers(run: SuiteRun) -> dict[str, SuiteAnswer]:
    return {a.contestant.slug: a for a in SuiteAnswer.objects.filter(run=run).select_related("contestant")}


def answer_by_model(run: SuiteRun, texts: dict[str, str]) -> None:
    """End each live answer with its contestant's text."""
    for gen in live(run):
        finish(gen, texts[gen.model.slug])


def test_each_answer_is_checked_when_it_lands_and_the_failures_say_what_they_got(owner, three):
    a, b = three[:2]
    run = start_run(owner, suite=checked_suite(owner), contestants=[a, b])
    runner.step(run)
    first, second = live(run)
    finish(first, "Paris.")  # the first token 0.75 s after the worker began (tests/arena/factories.finish)
    runner.step(run)
    stored = answers(run)
    landed, waiting = stored[first.model.slug], stored[second.model.slug]
    assert landed.passed is True and landed.score == 1.0 and landed.checked_at is not None
    assert [r["name"] for r in landed.checks] == ["names Paris", "ttft", "brief"]  # the defaults, then its own
    assert landed.checks[1]["got"] == "0.75 s"
    assert waiting.passed is None and waiting.checks == []  # still generating: not checked

    finish(second, "The capital of France is Lyon, I think.")
    run_to_end(run)
    run.refresh_from_db()
    assert run.state == SuiteRun.State.DONE
    failed = answers(run)[second.model.slug]
    assert failed.passed is False and failed.score == pytest.approx(1 / 3)
    assert [(r["name"], r["passed"], r["expected"], r["got"]) for r in failed.checks if not r["passed"]] == [
        ("names Paris", False, 'contains "paris" (any case)', 'missing "paris"'),
        ("brief", False, "at most 3 words", "8 words")]


def test_a_run_ends_only_once_every_done_answer_is_checked(owner, three, monkeypatch):
    run = start_run(owner, suite=checked_suite(owner), contestants=three[:2])
    monkeypatch.setattr(runner, "CHECK_BUDGET_S", -1.0)  # no time to check anything
    for _ in range(3):
        runner.step(run)
        answer_by_model(run, {m.slug: "Paris" for m in three})
    run.refresh_from_db()
    assert run.live and run.done == run.total  # every answer in, none checked: it goes on
    assert not SuiteAnswer.objects.filter(run=run, checked_at__isnull=False).exists()
    monkeypatch.setattr(runner, "CHECK_BUDGET_S", 10.0)
    runner.step(run)
    run.refresh_from_db()
    assert run.state == SuiteRun.State.DONE
    assert list(SuiteAnswer.objects.filter(run=run).values_list("passed", flat=True)) == [True, True]


def test_a_pathological_regex_fails_its_check_and_the_run_goes_on(owner, three):
    s = checked_suite(owner, {"prompt": "Say a lot of a.", "checks": [{"type": "regex", "value": "(a+)+$"}]},
                      defaults=[])
    run = start_run(owner, suite=s, contestants=three[:2])
    runner.step(run)
    for gen in live(run):
        finish(gen, "a" * 20_000 + "!")
    started = time.monotonic()
    runner.step(run)
    assert time.monotonic() - started < 2 * 8 * checks.REGEX_TIMEOUT_S  # two answers, each stopped in time
    run.refresh_from_db()
    assert run.state == SuiteRun.State.DONE
    for answer in answers(run).values():
        [result] = answer.checks
        assert answer.passed is False and result["got"] == "not evaluated"
        assert result["error"].startswith("the regex took longer than 0.25 s on this answer and was stopped")


def test_recheck_applies_the_suites_current_checks_without_generating(owner, three):
    run = start_run(owner, suite=checked_suite(owner), contestants=three[:2])
    run_to_end(run, answer="Paris")  # "Paris (<slug>)": passes every check
    assert set(SuiteAnswer.objects.filter(run=run).values_list("passed", flat=True)) == {True}
    generations = Generation.objects.count()
    Suite.objects.filter(id=run.suite_id).update(default_checks=[{"type": "starts_with", "value": "Lyon"}])
    run.suite.refresh_from_db()
    assert start_recheck(run, budget_s=math.inf).checked == 2
    assert Generation.objects.count() == generations  # nothing generated
    for answer in answers(run).values():
        assert answer.passed is False
        assert [r["name"] for r in answer.checks] == ["starts_with", "brief"]


def test_a_prompt_without_checks_counts_in_no_pass_rate(owner, three):
    s = checked_suite(owner, {"prompt": "One?"}, {"prompt": "Two?", "checks": [{"type": "is_json"}]}, defaults=[])
    run = start_run(owner, suite=s, contestants=three[:2])
    run_to_end(run, answer="Paris")
    by_prompt = {a.prompt.position: a for a in SuiteAnswer.objects.filter(run=run).select_related("prompt")}
    assert by_prompt[1].passed is None and by_prompt[1].checked_at is not None
    assert by_prompt[2].passed is False


def finished_run(owner, three) -> SuiteRun:
    """A run of 2 prompts x 3 contestants: the first contestant passes everything, the others fail
    "names Paris" on the second prompt."""
    s = checked_suite(owner, {"prompt": "Capital of France?"}, {"prompt": "And of Italy?"})
    run = start_run(owner, suite=s, contestants=three)
    while run.live:
        runner.step(run)
        for gen in live(run):
            good = gen.model_id == three[0].id or gen.prompt.startswith("Capital")
            finish(gen, "Paris." if good else "Rome.")
        run.refresh_from_db()
    return run


def test_the_run_page_shows_each_answers_checks_and_the_pass_rates(mine, owner, three):
    run = finished_run(owner, three)
    html = mine.get(run.get_absolute_url()).content.decode().replace("&quot;", '"')
    assert html.count('data-checks="pass"') == 4 and html.count('data-checks="fail"') == 2
    assert "Passed 2 checks" in html and "Failed 1 of 2 checks" in html
    assert '<strong>names Paris</strong>: expected contains "paris" (any case); got missing "paris"' in html
    section = html.split('id="suite-run-checks"')[1].split("</section>")[0]
    first, second = (section.split(f'data-model="{m.slug}"')[1].split("</tr>")[0] for m in three[:2])
    assert "2 of 2" in first and "<strong>100%</strong> <span class=\"interval\">(34–100%)</span>" in first
    assert "1 of 2" in second and "<strong>50%</strong> <span class=\"interval\">(9–91%)</span>" in second
    assert 'data-check="names Paris"' in section and 'data-check="ttft"' in section


def test_the_api_gives_the_pass_rates_and_each_answers_results(client, token, owner, three):
    run = finished_run(owner, three)
    data = api(client, "get", f"/api/v1/suite-runs/{run.id}", token).json()
    assert_conforms(data, "/api/v1/suite-runs/{id}")
    rates = {row["model"]: row for row in data["checks"]["contestants"]}
    assert (rates[three[0].slug]["passed"], rates[three[0].slug]["total"]) == (2, 2)
    assert rates[three[1].slug]["rate"] == 0.5 and rates[three[1].slug]["low"] == pytest.approx(0.0945, abs=1e-3)
    by_check = {row["name"]: row["contestants"] for row in data["checks"]["checks"]}
    assert [c["passed"] for c in by_check["names Paris"]] == [2, 1, 1]

    listed = api(client, "get", f"/api/v1/suite-runs/{run.id}/answers", token).json()
    assert_conforms(listed, "/api/v1/suite-runs/{id}/answers")
    assert [(a["prompt_position"], a["contestant"]) for a in listed["answers"][:3]] == [(1, m.slug) for m in three]
    failed = listed["answers"][4]
    assert failed["passed"] is False and failed["checks"][0]["got"] == 'missing "paris"'


def test_the_exports_carry_each_answers_checks(mine, owner, three):
    run = finished_run(owner, three)
    response = mine.get(f"/suite-runs/{run.id}/export.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["checks_passed"] for r in rows] == ["true", "true", "true", "true", "false", "false"]
    assert rows[4]["checks_failed"] == "names Paris" and json.loads(rows[4]["checks"])[0]["expected"]
    document = json.loads(b"".join(mine.get(f"/suite-runs/{run.id}/export.json").streaming_content))
    assert document["answers"][4]["checks_score"] == pytest.approx(0.5)
    assert document["answers"][4]["checks"][1] == {"name": "ttft", "type": "ttft", "passed": True, "score": 1.0,
                                                   "weight": 1.0, "expected": "at most 1 s to the first token",
                                                   "got": "0.75 s", "error": ""}


def test_a_run_of_one_contestant_checks_its_answers_and_ends(owner, three):
    """A CI gate of one model (manage.py arena_eval --models A): its answers checked, no pairs."""
    run = start_run(owner, suite=checked_suite(owner), contestants=three[:1])
    runner.step(run)
    answer_by_model(run, {three[0].slug: "Paris."})
    run_to_end(run)
    run.refresh_from_db()
    assert run.state == SuiteRun.State.DONE
    (answer,) = answers(run).values()
    assert answer.passed is True and answer.score == 1.0


def test_a_run_of_one_contestant_takes_no_judge(owner, three):
    from arena.suite_runs.actions import RunError

    with pytest.raises(RunError, match="A judge compares two answers"):
        start_run(owner, suite=checked_suite(owner), contestants=three[:1], judge_model=three[1])
