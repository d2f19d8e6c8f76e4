"""Adaptive and Swiss suite runs on a real database, started from the API and the form and run
to their end by the runner (tests/arena/suite_runs/running.py)."""

from __future__ import annotations

import itertools

import pytest

from arena.battles.models import Battle
from arena.suite_runs.models import SuiteJudgement, SuiteRun
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import suite
from tests.arena.suite_runs.running import run_to_end

pytestmark = pytest.mark.django_db


def test_an_adaptive_run_stops_at_its_budget_and_says_so(client, token, mine, owner, three):
    s = suite(owner, "One?", "Two?")
    data = {"suite": str(s.id), "contestants": [m.slug for m in three], "format": "adaptive",
            "judge": three[0].slug, "budget": 5}
    created = api(client, "post", "/api/v1/suite-runs", token, data)
    assert created.status_code == 201, created.content
    assert_conforms(created.json(), "/api/v1/suite-runs", "post", 201)
    assert created.json()["adaptive"] == {"budget": 5, "calls": 0, "stop_reason": "", "stopped_because": ""}
    run = SuiteRun.objects.get(id=created.json()["id"])
    run_to_end(run)  # "A" in both orders: ties, so no pair is ever separated
    run.refresh_from_db()
    assert run.state == SuiteRun.State.DONE and run.done == run.total == 6 + 4
    assert run.stop_reason == "budget" and run.judge_calls == 4  # a third pair needs 2 calls, 1 is left
    assert Battle.objects.filter(mode=Battle.Mode.SUITE).count() == 2
    read = api(client, "get", f"/api/v1/suite-runs/{run.id}", token)
    assert_conforms(read.json(), "/api/v1/suite-runs/{id}", "get", 200)
    assert read.json()["adaptive"] == {"budget": 5, "calls": 4, "stop_reason": "budget",
                                       "stopped_because": "budget spent"}
    html = mine.get(run.get_absolute_url()).content.decode()
    assert 'data-calls="4" data-budget="5" data-stop="budget"' in html
    assert "4 of 5 judge calls spent" in html and '<strong class="stop-reason">budget spent</strong>' in html


def test_an_adaptive_run_without_a_budget_gets_half_a_round_robins_calls(owner, three):
    from arena.suite_runs.actions import start_run

    run = start_run(owner, suite=suite(owner, "One?", "Two?"), contestants=three, format="adaptive",
                    judge_model=three[0])
    assert run.budget is None and run.call_budget == 3 * 2  # 3 pairs x 2 prompts x 2 orders, halved


def test_other_formats_show_no_budget(mine, owner, three):
    from arena.suite_runs.actions import start_run

    run = start_run(owner, suite=suite(owner, "One?"), contestants=three, judge_model=three[0])
    assert "suite-run-budget" not in mine.get(run.get_absolute_url()).content.decode()


def test_a_swiss_run_from_the_form_plays_its_rounds_without_rematches(mine, owner, catalogue):
    s = suite(owner, "One?", "Two?", "Three?", "Four?")
    eight = catalogue[:8]
    form = {"suite": str(s.id), "format": "swiss", "judge": eight[0].slug, "judge_template": "",
            **{f"contestant_{i}": m.slug for i, m in enumerate(eight, start=1)}}
    response = mine.post("/suite-runs/new/", form)
    run = SuiteRun.objects.get(owner=owner)
    assert response.status_code == 302 and run.format == "swiss"
    run_to_end(run)
    run.refresh_from_db()
    assert run.state == SuiteRun.State.DONE and run.done == run.total
    # ceil(log2 8) + 1 = 4 rounds of 4 pairs, each on one prompt of its own (4 prompts / 4 rounds).
    pairs = list(SuiteJudgement.objects.filter(run=run, order="left_first").values_list("prompt_id", "left_id",
                                                                                       "right_id"))
    assert len(pairs) == 16 and len({frozenset(p[1:]) for p in pairs}) == 16  # no pair met twice
    by_prompt = {prompt: [p[1:] for p in group] for prompt, group in
                 itertools.groupby(sorted(pairs), key=lambda p: p[0])}
    assert len(by_prompt) == 4
    for round_pairs in by_prompt.values():
        assert sorted(m for pair in round_pairs for m in pair) == sorted(m.id for m in eight)
    assert Battle.objects.filter(mode=Battle.Mode.SUITE).count() == 16
    assert "Swiss: rounds pairing similar scores" in mine.get(run.get_absolute_url()).content.decode()
