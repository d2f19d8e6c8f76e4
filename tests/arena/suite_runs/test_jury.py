"""A jury of up to three judges on a suite run: each reads every pair in both orders, a judge's
verdict is its order-consistent one, the pair's is their majority (no majority: a tie; a judge
whose reading failed for good abstains); each reading keeps its judge and one-line reason, and the
run's page and API show them with each judge's reliability. Runs are driven by hand as in
test_runner.py (tests/arena/factories.finish ends each generation)."""

from __future__ import annotations

import html as html_lib
import json
import re

import pytest

from arena.battles.models import Battle
from arena.suite_runs import judge, plan, runner
from arena.suite_runs.actions import RunError, start_run
from arena.suite_runs.models import SuiteJudgement, SuiteRun, SuiteRunJudge
from inference.structured import answer_valid, schema_problem
from tests.arena.factories import finish, suite
from tests.arena.suite_runs.running import FIRST_SHOWN, PREFERS_LEFT, PREFERS_RIGHT, live, run_with_judges

pytestmark = pytest.mark.django_db

def jury_run(owner, catalogue, behaviours, fail=frozenset(), prompts=("Capital of France?",)):
    judges = catalogue[2:2 + len(behaviours)]
    run = start_run(owner, suite=suite(owner, *prompts), contestants=catalogue[:2], judges=judges)
    run_with_judges(run, {j.slug: b for j, b in zip(judges, behaviours, strict=True)}, {judges[i].slug for i in fail})
    return run, judges


@pytest.mark.parametrize("behaviours, fail, outcome", [
    ((PREFERS_LEFT, FIRST_SHOWN, PREFERS_LEFT), (), "left"),  # two of three
    ((PREFERS_RIGHT, PREFERS_RIGHT, PREFERS_LEFT), (), "right"),
    ((PREFERS_LEFT, FIRST_SHOWN, PREFERS_RIGHT), (), "tie"),  # one each: no majority
    ((PREFERS_LEFT, PREFERS_LEFT, PREFERS_RIGHT), (2,), "left"),  # the third abstains: two of two
    ((PREFERS_LEFT, FIRST_SHOWN, PREFERS_LEFT), (2,), "tie"),  # one of the two who answered
    ((PREFERS_LEFT, PREFERS_LEFT, PREFERS_LEFT), (0, 1, 2), "tie"),  # nobody answered
], ids=["two-of-three", "right", "split", "one-missing", "missing-then-split", "all-missing"])
def test_a_jurys_majority_decides_the_pair(owner, catalogue, behaviours, fail, outcome):
    run, judges = jury_run(owner, catalogue, behaviours, fail)
    [battle] = Battle.objects.filter(mode=Battle.Mode.SUITE)
    assert battle.outcome == outcome and battle.judge == judges[0]  # the run's judge heads the record
    assert [(r["judge"], r["order"]) for r in battle.judgements] == [(j.slug, o) for j in judges for o in plan.ORDERS]
    for reading in battle.judgements:
        failed = judges.index(next(j for j in judges if j.slug == reading["judge"])) in fail
        said = "" if failed else json.loads(reading["raw"])["verdict"]
        assert reading["reason"] == ("" if failed else f"{said} is clearer and shorter.")
    calls = SuiteJudgement.objects.filter(run=run).count()
    assert calls == 6 and run.state == SuiteRun.State.DONE and run.done == run.total == 2 + 6


def test_one_judge_works_as_before_with_a_reason_beside_each_reading(owner, catalogue):
    run, [only] = jury_run(owner, catalogue, [PREFERS_LEFT])
    assert run.judges == [only] and not SuiteRunJudge.objects.exists()
    [battle] = Battle.objects.filter(mode=Battle.Mode.SUITE)
    assert battle.outcome == "left" and [r["verdict"] for r in battle.judgements] == ["left", "left"]
    assert battle.judgements[0]["reason"] == "A is clearer and shorter."


def test_the_reason_sits_in_the_constrained_json_capped_at_one_line():
    assert schema_problem(judge.VERDICT_SCHEMA) is None
    assert answer_valid('{"verdict":"A","reason":"Shorter."}', judge.VERDICT_SCHEMA)
    assert not answer_valid('{"verdict":"A"}', judge.VERDICT_SCHEMA)  # a reason is required
    assert not answer_valid(json.dumps({"verdict": "A", "reason": "x" * 201}), judge.VERDICT_SCHEMA)
    assert judge.JUDGE_PARAMS["max_new_tokens"] >= 100  # room for the reason after the verdict
    assert judge.read_reason('{"verdict": "B", "reason": "B  cites\\nthe source."}') == "B cites the source."
    assert judge.read_reason('{"verdict": "B", "reason": "cut sho') == "cut sho"  # out of tokens
    assert judge.read_reason("[[A]]") == "" and judge.read_reason('{"verdict": "A"}') == ""
    assert len(judge.read_reason(json.dumps({"verdict": "A", "reason": "y" * 500}))) == 200
    assert judge.read_verdict('{"verdict": "C", "reason": "Both fine."}') == "C"


def test_a_jury_is_checked_when_the_run_starts(owner, catalogue):
    s = suite(owner, "Q?")
    with pytest.raises(RunError, match="at most 3 judges"):
        start_run(owner, suite=s, contestants=catalogue[:2], judges=catalogue[:4])
    with pytest.raises(RunError, match="only once"):
        start_run(owner, suite=s, contestants=catalogue[:2], judges=[catalogue[2], catalogue[2]])
    with pytest.raises(RunError, match="not both"):
        start_run(owner, suite=s, contestants=catalogue[:2], judge_model=catalogue[3], judges=catalogue[2:4])
    run = start_run(owner, suite=s, contestants=catalogue[:2], format="adaptive", judges=catalogue[1:4])
    # Half a round robin's calls, but at least one pair's (3 judges x 2 orders).
    assert run.judges == catalogue[1:4] and run.call_budget == 6


def test_an_adaptive_jury_takes_a_pair_only_when_every_judges_readings_fit():
    state = plan.RunState(prompts=[1, 2], contestants=[10, 20, 30], format=plan.ADAPTIVE, judges=3, budget=12)
    state.answers = {(p, c): plan.Slot(plan.DONE, 1) for p in state.prompts for c in state.contestants}
    step = plan.plan(state, in_flight=100)
    pairs = {key[:3] for key in step.start_judgements}
    assert len(pairs) == 2 and len(step.start_judgements) == 12  # two pairs of six readings: the budget
    assert {plan.split_reading(key[3]) for key in step.start_judgements} == {(o, j) for o in plan.ORDERS
                                                                              for j in (1, 2, 3)}


def test_a_reading_stored_before_juries_is_the_first_judges(owner, catalogue):
    run = start_run(owner, suite=suite(owner, "Q?"), contestants=catalogue[:2], judge_model=catalogue[2])
    runner.step(run)
    for gen in live(run):
        # Two different answers: the same two would make both readings one request, the second reusing
        # the first's reply a step later (arena/generations/cache.py).
        finish(gen, f"An answer of {gen.model.slug}.")
    runner.step(run)
    rows = list(SuiteJudgement.objects.filter(run=run))
    assert {row.judge_id for row in rows} == {catalogue[2].id}
    SuiteJudgement.objects.filter(run=run).update(judge=None)  # as the migration found them
    state, _gens = runner.load_state(run, [p.id for p in run.suite.ordered_prompts()], [m.id for m in catalogue[:2]])
    assert {key[3] for key in state.judgements} == set(plan.ORDERS)
    runner.step(run)
    assert SuiteJudgement.objects.filter(run=run).count() == 2  # nothing judged twice


def test_the_page_shows_each_judges_readings_reasons_and_reliability(client, owner, catalogue):
    client.force_login(owner)
    run, judges = jury_run(owner, catalogue, (PREFERS_LEFT, FIRST_SHOWN, PREFERS_RIGHT))
    page = html_lib.unescape(client.get(run.get_absolute_url()).content.decode())
    assert "judges: " + ", ".join(j.name for j in judges) + " (majority)" in page
    assert "the majority of 3 judges; no majority is a tie" in page
    assert "The judges agreed with themselves on 2 of 3 readings of a pair (67 %)" in page
    for slug in (j.slug for j in judges):
        assert f'<p class="jury-seat" data-judge="{slug}">' in page
    seats = re.findall(r'<p class="jury-seat" data-judge="[^"]+">Judge <strong>[^<]+</strong>: ([^<]+)</p>', page)
    left, right = (m.label or m.name for m in catalogue[:2])
    assert seats == [f"{left} is better", "a tie", f"{right} is better"]
    assert page.count('<span class="judge-reason">“A is clearer and shorter.”</span>') == 4
    assert f"Its reply (A: {right}, B: {left})" in page
    panel = re.search(r'<section class="judge-reliability".*?</section>', page, re.S).group(0)
    assert all(f'data-judge="{j.slug}"' in panel for j in judges)
    assert panel.count("too few pairs") >= 3  # one pair: below the threshold, no kappa
    assert panel.count('data-verdict="not enough readings"') == 6  # each judge's row and its sentence


def test_the_api_starts_a_jury_and_reports_its_reliability(client, owner, token, catalogue):
    s = suite(owner, "Q?")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    body = {"suite": str(s.id), "contestants": [m.slug for m in catalogue[:2]],
            "judges": [m.slug for m in catalogue[2:5]]}
    response = client.post("/api/v1/suite-runs", json.dumps(body), content_type="application/json", **auth)
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["judge"] == catalogue[2].slug and created["judges"] == body["judges"]
    run = SuiteRun.objects.get(id=created["id"])
    run_with_judges(run, dict.fromkeys(body["judges"], PREFERS_LEFT))
    data = client.get(f"/api/v1/suite-runs/{run.id}", **auth).json()
    rel = data["judge_reliability"]
    assert [j["judge"] for j in rel["judges"]] == body["judges"] and rel["min_pairs"] == 10
    # One pair each: every share given with its counts and interval, the verdict "not enough readings".
    assert all(j["pairs"] == 1 and j["self_consistency"] == 1 and j["consistent"]["count"] == 1
               and j["consistent"]["interval"][0] < 0.25 and j["verdict"] == "not enough readings"
               for j in rel["judges"])
    assert data["judge_agreement"] == {"agreed": 3, "total": 3, "percent": 100}
    assert len(rel["between"]) == 3 and all(b["kappa"] is None and b["pairs"] == 1 for b in rel["between"])
    refused = client.post("/api/v1/suite-runs", json.dumps({**body, "judges": [m.slug for m in catalogue[:4]]}),
                          content_type="application/json", **auth)
    assert refused.status_code == 400 and "judges" in refused.json()["error"]["fields"]


def test_the_form_names_up_to_three_judges(client, owner, catalogue):
    client.force_login(owner)
    s = suite(owner, "Q?")
    form = {"suite": s.id, "format": "round_robin", "contestant_1": catalogue[0].slug,
            "contestant_2": catalogue[1].slug, "judge": catalogue[2].slug, "judge_2": catalogue[3].slug,
            "judge_3": catalogue[4].slug, "judge_template": judge.DEFAULT_TEMPLATE}
    assert client.post("/suite-runs/new/", form).status_code == 302
    assert SuiteRun.objects.get().judges == catalogue[2:5]
    page = client.get("/suite-runs/new/").content.decode()
    assert 'name="judge_2"' in page and 'name="judge_3"' in page
    refused = client.post("/suite-runs/new/", {**form, "judge": ""})
    assert refused.status_code == 400 and "Name the first judge" in html_lib.unescape(refused.content.decode())
