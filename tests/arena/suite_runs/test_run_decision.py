"""What to pick after a suite run (issue 35): the run's page and its API end with the decision
summary computed from the run's own verdicts, never a single best from a handful of them, with the
run's caveats (provisional, a judge marked unreliable, speeds measured while answers shared a worker);
nothing while the run is live."""

from __future__ import annotations

import html as html_lib

import pytest

from arena.generations.models import Generation
from arena.suite_runs import runner
from arena.suite_runs.actions import start_run
from arena.suite_runs.models import SuiteAnswer, SuiteJudgement
from arena.suite_runs.report import UNRELIABLE_LEFT_OUT
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import finish, suite
from tests.arena.suite_runs.running import live, run_to_end

pytestmark = pytest.mark.django_db


def judged_by_preference(run, order: list[str]) -> None:
    """Run `run` to its end with a consistent judge: on every reading it picks whichever answer's
    model comes first in `order` (each answer names its model), whichever side it is shown on."""
    steps = 0
    while run.live:
        runner.step(run)
        judging = set(SuiteJudgement.objects.filter(run=run).values_list("generation_id", flat=True))
        for gen in live(run):
            if gen.id in judging:
                preferred, other = [slug for slug in order if f"({slug})" in gen.prompt]
                a_first = gen.prompt.find(f"({preferred})") < gen.prompt.find(f"({other})")
                finish(gen, '{"verdict": "A"}' if a_first else '{"verdict": "B"}')
            else:
                finish(gen, f"Paris ({gen.model.slug})")
        steps += 1
        assert steps < 200
    run.refresh_from_db()


@pytest.fixture
def small_run(owner, catalogue):
    """A finished round robin of three contestants on one prompt, judged consistently (catalogue[0]
    beats catalogue[1] beats catalogue[2]): three verdicts, each pair read in both orders."""
    run = start_run(owner, suite=suite(owner, "Capital of France?"), contestants=catalogue[:3],
                    judge_model=catalogue[3])
    judged_by_preference(run, [m.slug for m in catalogue[:3]])
    assert run.state == "done" and run.verdicts().count() == 3
    return run


def page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return html_lib.unescape(response.content.decode())


def test_the_run_page_and_api_end_with_what_to_pick_and_never_a_single_best_from_three_verdicts(
        client, owner, token, small_run, catalogue):
    client.force_login(owner)
    html = page(client, small_run.get_absolute_url())
    assert 'id="decision"' in html and "What to pick" in html
    assert html.index('id="decision"') > html.index('id="suite-run-charts"')
    body = api(client, "get", f"/api/v1/suite-runs/{small_run.id}", token).json()
    assert_conforms(body, "/api/v1/suite-runs/{id}", "get", 200)
    decision = body["decision"]
    # Three verdicts, one each: catalogue[0] won both its pairs, yet the data cannot name it the best.
    assert decision["best"] is None and decision["contenders"][0] == catalogue[0].slug
    assert len(decision["contenders"]) >= 2
    assert decision["sentences"][0].startswith(f"{len(decision['contenders'])} entries cannot be told apart")
    assert decision["top_two"] == [catalogue[0].slug, catalogue[1].slug]
    assert decision["separation"]["given"] == 1 and decision["separation"]["more"] >= 1
    assert any(c.startswith("Provisional: ") for c in decision["caveats"])
    for sentence in decision["sentences"]:
        assert sentence in html
    assert "is the best in this view" not in html


def test_mixed_speeds_are_a_caveat_of_the_run(client, owner, token, small_run, catalogue):
    shared = catalogue[0]  # every answer of it measured while two other answers shared its worker
    for answer in SuiteAnswer.objects.filter(run=small_run, contestant=shared).select_related("generation"):
        gen = answer.generation
        gen.metrics = {**gen.metrics, "shared_with_max": 2}
        gen.save(update_fields=["metrics"])
    for answer in SuiteAnswer.objects.filter(run=small_run).exclude(contestant=shared).select_related("generation"):
        gen = answer.generation
        gen.metrics = {**gen.metrics, "shared_with_max": 0}
        gen.save(update_fields=["metrics"])
    decision = api(client, "get", f"/api/v1/suite-runs/{small_run.id}", token).json()["decision"]
    assert any(c.startswith(f"Speeds not measured alike: {shared.label} is measured only while other answers "
                            "shared the worker") for c in decision["caveats"]), decision["caveats"]


def test_a_live_run_says_nothing_yet(client, owner, token, catalogue):
    run = start_run(owner, suite=suite(owner, "Capital of France?", "Capital of Spain?"), contestants=catalogue[:3],
                    judge_model=catalogue[3])
    runner.step(run)
    assert run.live
    client.force_login(owner)
    assert 'id="decision"' not in page(client, run.get_absolute_url())
    body = api(client, "get", f"/api/v1/suite-runs/{run.id}", token).json()
    assert body["decision"] is None
    assert_conforms(body, "/api/v1/suite-runs/{id}", "get", 200)


@pytest.fixture
def always_a(owner, catalogue):
    """A finished round robin of two contestants on nine prompts whose judge always answers "A":
    marked unreliable, and every verdict of the run counted its readings."""
    run = start_run(owner, suite=suite(owner, *[f"Capital of country {i}?" for i in range(9)]),
                    contestants=catalogue[:2], judge_model=catalogue[2])
    run_to_end(run, verdict="A")
    run.refresh_from_db()
    return run


def test_an_unreliable_judges_run_names_no_pick_unless_asked_and_then_says_so(client, owner, token, always_a,
                                                                               catalogue):
    judge = catalogue[2]
    left_out = UNRELIABLE_LEFT_OUT.format(names=judge.label, verb="is", pronoun="its")
    client.force_login(owner)
    html = page(client, always_a.get_absolute_url())
    assert left_out in html and "entries cannot be told apart" not in html
    assert "?unreliable=include#suite-run-decision" in html
    body = api(client, "get", f"/api/v1/suite-runs/{always_a.id}", token).json()
    assert_conforms(body, "/api/v1/suite-runs/{id}", "get", 200)
    assert body["decision"]["contenders"] == [] and body["decision"]["sentences"] == [left_out]

    counted = f"Verdicts of a judge marked unreliable are counted here: {judge.label}."
    shown = page(client, always_a.get_absolute_url() + "?unreliable=include")
    assert counted in shown and left_out not in shown
    included = api(client, "get", f"/api/v1/suite-runs/{always_a.id}?unreliable=include", token).json()
    assert counted in included["decision"]["caveats"] and included["decision"]["contenders"]
    assert_conforms(included, "/api/v1/suite-runs/{id}", "get", 200)
    refused = api(client, "get", f"/api/v1/suite-runs/{always_a.id}?unreliable=yes", token)
    assert refused.status_code == 400 and "unreliable" in refused.json()["error"]["fields"]


def test_the_poll_that_sees_the_run_end_swaps_the_decision_in(client, owner, small_run):
    client.force_login(owner)
    html = html_lib.unescape(client.get(f"/suite-runs/{small_run.id}/progress").content.decode())
    assert '<div id="suite-run-decision" class="card" hx-swap-oob="true">' in html and "What to pick" in html
    assert Generation.objects.filter(origin=Generation.Origin.SUITE).exists()
