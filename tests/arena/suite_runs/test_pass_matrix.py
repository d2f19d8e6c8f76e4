"""A suite run's pass matrix (arena.suite_runs.matrix; /suite-runs/<id>/matrix), its pass rates per
contestant, check and tag with their Wilson intervals, what its answers cost at their entries'
prices, and the re-check (the page's button and POST /api/v1/suite-runs/<id>/recheck). The run is
a real one (the runner's steps, each generation ended as a worker would: tests/arena/factories)
with known answers; tests/live/test_pass_matrix_browser.py shows the page in Chromium."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.generations.models import Generation
from arena.leaderboard.reliability import Share
from arena.suite_runs import matrix, runner
from arena.suite_runs.actions import start_run
from arena.suite_runs.models import SuiteAnswer, SuiteRun
from arena.suites import parsing
from arena.suites.actions import create_suite
from arena.suites.models import Suite
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import finish
from tests.arena.suite_runs.running import live

pytestmark = pytest.mark.django_db

PARIS = {"type": "contains", "value": "paris", "ignore_case": True, "name": "names Paris"}
BRIEF = {"type": "words", "max": 3, "name": "brief"}
PROMPTS = [{"prompt": "Capital of France?", "checks": [PARIS], "tags": ["geo", "easy"]},
           {"prompt": "And of Italy?", "checks": [PARIS, BRIEF], "tags": ["geo"]},
           {"prompt": "Say hi.", "tags": ["chat"]}]  # no check: its cells say "no checks"


def answer(gen: Generation, a, b, c) -> None:
    """a passes everything; b names Rome for Italy; c fails to generate on France (every attempt)
    and rambles about Italy (names Paris, not brief)."""
    first = gen.prompt.startswith("Capital")
    if gen.model_id == c.id and first:
        finish(gen, "", status=Generation.Status.FAILED)
    elif gen.model_id == c.id:
        finish(gen, "Paris is the answer to all of this.")
    elif gen.model_id == b.id and gen.prompt.startswith("And"):
        finish(gen, "Rome.")
    else:
        finish(gen, "Paris.")


def known_run(owner, three) -> SuiteRun:
    suite = create_suite(owner, name="Capitals", prompts=parsing.api_items(PROMPTS), default_checks=[])
    run = start_run(owner, suite=suite, contestants=three)
    for _ in range(50):
        if not run.live:
            return run
        runner.step(run)
        for gen in live(run):
            answer(gen, *three)
        run.refresh_from_db()
    raise AssertionError("the run never ended")


@pytest.fixture
def priced(three):
    """The first contestant priced per token, the second per hour, the third without a price."""
    a, b, _ = three
    a.price_input_per_mtok, a.price_output_per_mtok = 1.0, 2.0
    a.save()
    b.price_per_hour = 3.6
    b.save()
    return three


def cells_of(html: str) -> list[list[str]]:
    body = html.split('id="pass-matrix"')[1].split("</tbody>")[0].split("<tbody>")[1]
    return [[part.split('"')[0] for part in row.split('data-state="')[1:]] for row in body.split("</tr>")[:-1]]


# --- the pure shaping -------------------------------------------------------------------------
def facts(status="done", passed=None, checked=True, checks=(), score=None, prompt=1, contestant=1):
    return matrix.Facts(prompt, contestant, status, passed, score, checks, checked)


def test_each_state_of_a_cell():
    failing = [{"name": "brief", "passed": False, "expected": "at most 3 words", "got": "8 words", "error": ""},
               {"name": "names Paris", "passed": True}]
    assert matrix.cell(None).words == "not started"
    assert matrix.cell(facts(passed=True, score=1.0)).words == "pass"
    assert matrix.cell(facts(passed=True, score=1.0)).score is None  # a full score is not repeated
    failed = matrix.cell(facts(passed=False, score=0.5, checks=failing))
    assert (failed.words, failed.score, failed.named) == ("fail", 0.5, ["brief"])
    assert failed.title == "Fail\nbrief: expected at most 3 words; got 8 words"
    assert matrix.cell(facts(checked=False)).words == "not checked"
    assert matrix.cell(facts(checked=True)).words == "no checks"
    assert matrix.cell(facts(status="failed", checked=False)).words == "failed to generate"
    died = matrix.Facts(1, 1, "failed", None, None, (), False, failure_reason="The worker died mid-stream.")
    assert matrix.cell(died).title == "Failed to generate: The worker died mid-stream."
    assert matrix.cell(facts(status="cancelled")).words == "cancelled"
    assert matrix.cell(facts(status="running", checked=False)).words == "generating"


def test_a_cell_names_three_failing_checks_and_counts_the_rest():
    results = [{"name": f"check {i}", "passed": False, "expected": "x", "got": "y"} for i in range(5)]
    cell = matrix.cell(facts(passed=False, checks=results))
    assert cell.named == ["check 0", "check 1", "check 2"] and cell.more == 2
    assert cell.title.count("\n") == 5  # every one in the tooltip


STATUSES = st.sampled_from(["done", "failed", "cancelled", "running", "queued"])
FACTS = st.builds(facts, status=STATUSES, passed=st.sampled_from([None, True, False]), checked=st.booleans(),
                  prompt=st.integers(1, 6), contestant=st.integers(1, 3))


@given(st.lists(FACTS, max_size=30, unique_by=lambda f: (f.prompt_id, f.contestant_id)),  # one answer a cell
       st.sampled_from(["", "a", "b"]), st.booleans())
def test_the_filters_keep_exactly_the_prompts_asked_for(answers, tag, failing_only):
    prompts = [(pid, ["a"] if pid % 2 else ["b", "a"] if pid % 3 == 0 else []) for pid in range(1, 7)]
    failing = matrix.failing_prompts(answers)
    shown = matrix.select(prompts, tag, failing if failing_only else None)
    assert shown == sorted(shown)  # the run's order
    for pid, tags in prompts:
        wanted = (not tag or tag in tags) and (not failing_only or pid in failing)
        assert (pid in shown) == wanted
    # a prompt is failing exactly when one of its cells reads fail or failed to generate
    rows = matrix.rows([p for p, _ in prompts], [1, 2, 3], answers)
    for (pid, _), row in zip(prompts, rows, strict=True):
        assert (pid in failing) == any(c.state in matrix.FAILING for c in row)


# --- the page ---------------------------------------------------------------------------------
def test_the_matrix_shows_every_answers_state_and_names_the_failing_checks(mine, owner, three):
    run = known_run(owner, three)
    response = mine.get(f"/suite-runs/{run.id}/matrix")
    html = response.content.decode()
    assert response.status_code == 200
    assert cells_of(html) == [["pass", "pass", "failed"], ["pass", "fail", "fail"],
                              ["no-checks", "no-checks", "no-checks"]]
    for model in three:  # named as the run page names them
        assert f'data-model="{model.slug}">{model.label}</th>' in html
    paris = 'names Paris: expected contains "paris" (any case); got missing "paris"'
    assert f"<summary>names Paris</summary><ul><li>{paris}</li></ul>" in html.replace("&quot;", '"')
    assert "<summary>brief</summary><ul><li>brief: expected at most 3 words; got 8 words</li></ul>" in html
    assert 'title="Fail\nbrief: expected at most 3 words; got 8 words"' in html
    assert 'data-shown="3" data-prompts="3" data-failing="2"' in html
    # each cell links to its answer, which its owner opens
    rambling = SuiteAnswer.objects.get(run=run, contestant=three[2], prompt__position=2)
    assert f'href="/g/{rambling.generation_id}/"' in html
    assert "Paris is the answer to all of this." in mine.get(f"/g/{rambling.generation_id}/").content.decode()


def test_failing_only_and_a_tag_filter_the_rows(mine, owner, three):
    run = known_run(owner, three)
    failing = mine.get(f"/suite-runs/{run.id}/matrix?failing=1").content.decode()
    assert cells_of(failing) == [["pass", "pass", "failed"], ["pass", "fail", "fail"]]
    assert 'data-shown="2"' in failing
    assert "2 of 3 prompts with an answer that failed its checks or failed to generate" in failing
    chat = mine.get(f"/suite-runs/{run.id}/matrix?tag=chat").content.decode()
    assert cells_of(chat) == [["no-checks"] * 3]
    assert mine.get(f"/suite-runs/{run.id}/matrix?tag=chat&failing=1").content.decode().count('id="matrix-empty"') == 1
    easy = mine.get(f"/suite-runs/{run.id}/matrix?tag=easy").content.decode()
    assert cells_of(easy) == [["pass", "pass", "failed"]]


@pytest.mark.parametrize("query", ["?page=abc", "?page=-1", "?page=99999999999999", "?tag=" + "x" * 5000,
                                   "?tag=%00", "?failing=yes", "?tag=geo&tag=chat"])
def test_bad_queries_read_as_nothing_or_the_nearest_page(mine, owner, three, query):
    run = known_run(owner, three)
    response = mine.get(f"/suite-runs/{run.id}/matrix{query}")
    assert response.status_code == 200
    assert len(cells_of(response.content.decode())) >= 1


def test_pages_of_prompts(mine, owner, three, monkeypatch):
    run = known_run(owner, three)
    monkeypatch.setattr(matrix, "PAGE_PROMPTS", 2)
    first = mine.get(f"/suite-runs/{run.id}/matrix").content.decode()
    assert len(cells_of(first)) == 2 and "Page 1 of 2" in first and 'href="?page=2" rel="next"' in first
    second = mine.get(f"/suite-runs/{run.id}/matrix?page=2").content.decode()
    assert cells_of(second) == [["no-checks"] * 3] and 'rel="prev"' in second
    tagged = mine.get(f"/suite-runs/{run.id}/matrix?tag=geo&failing=1").content.decode()
    assert "Page 1 of 2" not in tagged  # two prompts: one page


def test_the_matrix_reads_the_same_few_queries_whatever_the_runs_size(mine, owner, three,
                                                                      django_assert_max_num_queries):
    small = known_run(owner, three)
    big_prompts = [{"prompt": f"Question {i}?", "checks": [PARIS], "tags": [f"t{i % 3}"]} for i in range(40)]
    suite = create_suite(owner, name="Many", prompts=parsing.api_items(big_prompts), default_checks=[])
    big = start_run(owner, suite=suite, contestants=three)
    while big.live:
        runner.step(big)
        for gen in live(big):
            finish(gen, "Paris." if hash(gen.prompt) % 2 else "Rome.")
        big.refresh_from_db()
    mine.get(f"/suite-runs/{small.id}/matrix")  # the session and user cached alike
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as counted:
        mine.get(f"/suite-runs/{small.id}/matrix")
    with django_assert_max_num_queries(len(counted.captured_queries)):
        assert mine.get(f"/suite-runs/{big.id}/matrix").status_code == 200


def test_another_users_run_is_a_404_and_a_visitor_logs_in(client, owner, outsider, three):
    run = known_run(owner, three)
    client.force_login(outsider)
    assert client.get(f"/suite-runs/{run.id}/matrix").status_code == 404
    assert client.post(f"/suite-runs/{run.id}/recheck").status_code == 404
    client.logout()
    assert client.get(f"/suite-runs/{run.id}/matrix").status_code == 302


# --- pass rates per contestant, check and tag -------------------------------------------------
def test_the_pass_rates_per_contestant_check_and_tag_with_their_intervals(client, token, owner, three):
    run = known_run(owner, three)
    data = api(client, "get", f"/api/v1/suite-runs/{run.id}", token).json()
    assert_conforms(data, "/api/v1/suite-runs/{id}")
    rates = data["checks"]
    a, b, c = three

    def counts(rows):
        return [(row["model"], row["passed"], row["total"]) for row in rows]

    assert counts(rates["contestants"]) == [(a.slug, 2, 2), (b.slug, 1, 2), (c.slug, 0, 1)]
    checks = {row["name"]: counts(row["contestants"]) for row in rates["checks"]}
    assert checks == {"names Paris": [(a.slug, 2, 2), (b.slug, 1, 2), (c.slug, 1, 1)],
                      "brief": [(a.slug, 1, 1), (b.slug, 1, 1), (c.slug, 0, 1)]}
    tags = {row["name"]: counts(row["contestants"]) for row in rates["tags"]}
    # "chat" has no checked answer; "easy" only France, which c never answered
    assert tags == {"easy": [(a.slug, 1, 1), (b.slug, 1, 1), (c.slug, 0, 0)],
                    "geo": [(a.slug, 2, 2), (b.slug, 1, 2), (c.slug, 0, 1)]}
    assert [row["name"] for row in rates["tags"]] == ["easy", "geo"]
    geo_b = rates["tags"][1]["contestants"][1]
    expected = Share(1, 2).interval
    assert (geo_b["rate"], geo_b["low"], geo_b["high"]) == (0.5, expected[0], expected[1])
    assert geo_b["low"] == pytest.approx(0.0945, abs=1e-3)  # Wilson, not the normal interval's 0
    empty = rates["tags"][0]["contestants"][2]
    assert (empty["rate"], empty["low"], empty["high"]) == (None, None, None)
    assert rates["checked_at"] is not None


def test_the_run_page_shows_the_rates_per_tag(mine, owner, three):
    run = known_run(owner, three)
    html = mine.get(run.get_absolute_url()).content.decode()
    section = html.split('id="suite-run-checks"')[1].split("</section>")[0]
    geo = section.split('data-tag="geo"')[1].split("</tr>")[0]
    assert f'href="/suite-runs/{run.id}/matrix?tag=geo"' in geo
    assert "50% <span class=\"interval\">(1 of 2; 9–91%)</span>" in geo
    assert "100% <span class=\"interval\">(2 of 2; 34–100%)</span>" in geo
    assert 'data-tag="chat"' not in section
    assert "Cost per answer" not in section  # no entry has a price


# --- cost per answer --------------------------------------------------------------------------
def test_cost_per_answer_and_per_passing_answer(client, token, owner, priced):
    run = known_run(owner, priced)
    rates = api(client, "get", f"/api/v1/suite-runs/{run.id}", token).json()["checks"]["contestants"]
    a, b, c = (row["cost"] for row in rates)
    # every answer: 7 prompt tokens, 3 generated, the first 0.75 s after it began, then 12.5 tokens/s
    per_token = (7 * 1.0 + 3 * 2.0) / 1e6
    assert a["per_answer"] == pytest.approx(per_token) and a["answers_priced"] == 3
    assert a["per_passing_answer"] == pytest.approx(per_token)  # 2 checked, both pass
    hourly = (0.75 + 2 / 12.5) * 3.6 / 3600
    assert b["per_answer"] == pytest.approx(hourly)
    assert b["per_passing_answer"] == pytest.approx(2 * hourly / 1)  # 2 checked, 1 passes
    assert b["price"] == "$3.6 per hour of the machine" and a["price"] == "$1 / $2 per million tokens in / out"
    assert c == {"price": None, "currency": "USD", "per_answer": None, "per_passing_answer": None,
                 "answers_priced": 0, "answers_unmeasured": 0, "checked_priced": 0, "passing_priced": 0}


def test_the_run_page_shows_the_cost_beside_the_pass_rates(mine, owner, priced):
    run = known_run(owner, priced)
    section = mine.get(run.get_absolute_url()).content.decode().split('id="suite-run-checks"')[1]
    row_a, row_b, row_c = (section.split(f'data-model="{m.slug}"')[1].split("</tr>")[0] for m in priced)
    assert "<th>Cost per answer</th><th>Cost per passing answer</th>" in section
    assert '>$0.0000130<span class="price">at $1 / $2 per million tokens in / out</span></td>' in row_a
    assert '>$0.000910<span class="price">at $3.6 per hour of the machine</span></td>' in row_b
    assert ">$0.00182</td>" in row_b
    assert 'colspan="2">no price</td>' in row_c


def test_a_price_needs_what_it_prices_measured(client, token, owner, priced):
    """An hourly price needs the decode rate: an answer of several tokens without one has no cost."""
    run = known_run(owner, priced)
    Generation.objects.filter(model=priced[1], status="done").update(tokens_per_s=None)
    cost = api(client, "get", f"/api/v1/suite-runs/{run.id}", token).json()["checks"]["contestants"][1]["cost"]
    assert cost["per_answer"] is None and cost["answers_unmeasured"] == 3 and cost["answers_priced"] == 0


def test_the_exports_carry_the_cost_and_the_rates(mine, owner, priced):
    run = known_run(owner, priced)
    rows = list(csv.DictReader(io.StringIO(b"".join(mine.get(f"/suite-runs/{run.id}/export.csv")
                                                    .streaming_content).decode())))
    by = {(r["prompt_position"], r["contestant"]): r["cost_usd"] for r in rows}
    assert float(by[("1", priced[0].slug)]) == pytest.approx(1.3e-5)
    assert by[("1", priced[2].slug)] == ""  # no price (and failed to generate)
    document = json.loads(b"".join(mine.get(f"/suite-runs/{run.id}/export.json").streaming_content))
    assert [t["name"] for t in document["run"]["check_rates"]["tags"]] == ["easy", "geo"]
    assert document["run"]["check_rates"]["contestants"][0]["cost"]["per_answer"] == pytest.approx(1.3e-5)


# --- re-check -----------------------------------------------------------------------------------
def test_the_recheck_endpoint_applies_changed_checks_without_generating(client, token, owner, three):
    run = known_run(owner, three)
    generations = Generation.objects.count()
    Suite.objects.filter(id=run.suite_id).update(default_checks=[{"type": "words", "max": 1, "name": "one word"}])
    response = api(client, "post", f"/api/v1/suite-runs/{run.id}/recheck", token)
    assert response.status_code == 200
    data = response.json()
    assert_conforms(data, "/api/v1/suite-runs/{id}/recheck", "post")
    assert data["rechecked"] == 8  # the done answers (c's France failed to generate)
    assert Generation.objects.count() == generations
    rates = {row["model"]: (row["passed"], row["total"]) for row in data["checks"]["contestants"]}
    # now every answer has a check (the new default, also on "Say hi."): c rambles on both
    assert rates == {three[0].slug: (3, 3), three[1].slug: (2, 3), three[2].slug: (0, 2)}
    assert [row["name"] for row in data["checks"]["checks"]] == ["one word", "names Paris", "brief"]


def test_the_recheck_endpoint_is_the_owners_and_takes_only_post(client, token, owner, outsider, three):
    from arena.accounts.models import ApiToken

    run = known_run(owner, three)
    other = ApiToken.issue(outsider)
    refused = api(client, "post", f"/api/v1/suite-runs/{run.id}/recheck", other)
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "not_found"
    wrong = api(client, "get", f"/api/v1/suite-runs/{run.id}/recheck", token)
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method_not_allowed"
    assert "POST" in wrong["Allow"]
    assert api(client, "post", f"/api/v1/suite-runs/{run.id}/recheck").status_code == 401
    missing = api(client, "post", "/api/v1/suite-runs/00000000-0000-0000-0000-000000000000/recheck", token)
    assert missing.status_code == 404


def test_the_recheck_button(mine, owner, three):
    run = known_run(owner, three)
    page = mine.get(run.get_absolute_url()).content.decode()
    assert f'action="/suite-runs/{run.id}/recheck"' in page and 'id="suite-run-recheck"' in page
    assert mine.get(f"/suite-runs/{run.id}/recheck").status_code == 405
    before = list(SuiteAnswer.objects.filter(run=run).values_list("checked_at", flat=True))
    Suite.objects.filter(id=run.suite_id).update(default_checks=[{"type": "is_json"}])
    response = mine.post(f"/suite-runs/{run.id}/recheck")
    assert response.status_code == 302 and response["Location"].endswith(f"/suite-runs/{run.id}/#suite-run-checks")
    assert SuiteAnswer.objects.filter(run=run, passed=True).count() == 0
    after = list(SuiteAnswer.objects.filter(run=run).values_list("checked_at", flat=True))
    assert [a for a, b in zip(after, before, strict=True) if b and a and a > b]



def test_a_new_version_changing_only_the_checks_reruns_from_the_cache_with_its_checks(owner, three):
    """What docs/suites.md promises: import the suite again with other checks, run it again with
    reuse: every answer comes from the cache (nothing reaches the line) and is checked anew."""
    from arena.generations import admission
    from arena.suites.actions import import_version
    from arena.suites.parsing import SuiteFile

    greedy = {"temperature": 0.0}
    suite = create_suite(owner, name="Capitals", prompts=parsing.api_items(PROMPTS[:2]), default_checks=[])
    first = start_run(owner, suite=suite, contestants=three[:2], params=greedy)
    while first.live:
        runner.step(first)
        for gen in live(first):
            finish(gen, "Paris.")
        first.refresh_from_db()
    stricter = [{**p, "checks": [{"type": "contains", "value": "Rome", "name": "names Rome"}]} for p in PROMPTS[:2]]
    assert import_version(suite, SuiteFile(parsing.api_items(stricter)))
    suite.refresh_from_db()
    assert suite.version == 2
    second = start_run(owner, suite=suite, contestants=three[:2], params=greedy, reuse_answers=True)
    for _ in range(20):
        if not second.live:
            break
        runner.step(second)
        assert live(second) == []  # nothing to generate
        second.refresh_from_db()
    assert second.state == SuiteRun.State.DONE and admission.admit_waiting() == 0
    answers = SuiteAnswer.objects.filter(run=second).select_related("generation")
    assert all(a.generation.cached and a.passed is False for a in answers) and len(answers) == 4
    assert {r["name"] for a in answers for r in a.checks} == {"names Rome"}


def test_a_hostile_answer_and_check_name_stay_text_in_the_matrix(mine, owner, three):
    """What a check got is cut from the answer, and a suite names its checks: both are escaped."""
    from tests.payloads import PAYLOADS

    hostile = PAYLOADS["img onerror"]
    spec = [{"prompt": "Say yes.", "checks": [{"type": "equals", "value": "yes", "name": PAYLOADS["script tag"]}]}]
    suite = create_suite(owner, name="Hostile", prompts=parsing.api_items(spec), default_checks=[])
    run = start_run(owner, suite=suite, contestants=three[:2])
    while run.live:
        runner.step(run)
        for gen in live(run):
            finish(gen, hostile)
        run.refresh_from_db()
    html = mine.get(f"/suite-runs/{run.id}/matrix").content.decode()
    assert cells_of(html) == [["fail", "fail"]]
    assert "<script>window.__xss" not in html and "<img src=x" not in html
    assert "&lt;script&gt;window.__xss = 1" in html and "&lt;img src=x onerror=" in html


def pathological_run(owner, three, answers: int) -> SuiteRun:
    """A run whose every answer takes its regex out of time (about 0.25 to 0.5 s a check)."""
    spec = [{"prompt": f"Say a lot of a, {i}.", "checks": [{"type": "regex", "value": "(a+)+$"}]}
            for i in range(answers // 2)]
    suite = create_suite(owner, name="Slow", prompts=parsing.api_items(spec), default_checks=[])
    run = start_run(owner, suite=suite, contestants=three[:2])
    for _ in range(answers):
        if not run.live:
            return run
        runner.step(run)
        for gen in live(run):
            finish(gen, "a" * 20_000 + "!")
        run.refresh_from_db()
    raise AssertionError("the run never ended")


def test_checking_keeps_to_its_budget_answer_by_answer(owner, three):
    """A batch of slow answers used to be checked whole before the budget was looked at: 200 of
    them outlasted a step's time limit, so no step stored one and the run never ended."""
    import time

    from arena.suite_runs import checking

    run = pathological_run(owner, three, 8)
    SuiteAnswer.objects.filter(run=run).update(checked_at=None, passed=None)
    started = time.monotonic()
    left = checking.check_answers(run, budget_s=0.3)
    assert time.monotonic() - started < 0.3 + 2 * 0.6  # at most one answer past the budget
    assert 0 < left < 8
    assert SuiteAnswer.objects.filter(run=run, checked_at__isnull=False).count() == 8 - left  # what it did, stored


def test_a_slow_recheck_answers_at_once_and_finishes_in_the_background(client, token, owner, three, monkeypatch,
                                                                     django_capture_on_commit_callbacks):
    from arena.suite_runs import actions, tasks

    run = pathological_run(owner, three, 8)
    monkeypatch.setattr(actions, "RECHECK_BUDGET_S", 0.3)
    with django_capture_on_commit_callbacks() as queued:
        response = api(client, "post", f"/api/v1/suite-runs/{run.id}/recheck", token)
    data = response.json()
    assert response.status_code == 200 and data["pending"] > 0 and data["rechecked"] + data["pending"] == 8
    assert data["checks"]["pending"] == data["pending"]  # they read as not checked meanwhile
    assert_conforms(data, "/api/v1/suite-runs/{id}/recheck", "post")
    assert len(queued) == 1  # the rest handed to finish_recheck once the request commits
    matrix_page = client.get(f"/suite-runs/{run.id}/matrix")  # logged out: the login page
    assert matrix_page.status_code == 302
    again = []
    monkeypatch.setattr(tasks, "RECHECK_STEP_S", 0.3)
    monkeypatch.setattr(tasks.finish_recheck, "delay", lambda run_id: again.append(run_id))
    for _ in range(20):
        tasks.finish_recheck(str(run.id))
        if not again:
            break
        again.clear()
    assert SuiteAnswer.objects.filter(run=run, checked_at__isnull=True).count() == 0
    assert SuiteAnswer.objects.filter(run=run, passed=False).count() == 8
