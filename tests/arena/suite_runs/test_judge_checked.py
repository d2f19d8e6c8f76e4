"""Judges checked before they count (issue 35): a judge that answers "A" on every reading, run
through the suite runner's own code paths, is marked unreliable with its figures in words; the
run's headline and its reliability table give the same counts; its verdicts are out of the run's
charts and of the leaderboard unless asked for, and labelled when shown."""

from __future__ import annotations

import html as html_lib
import re

import pytest
from django.urls import reverse

from arena.leaderboard import records, reliability
from arena.suite_runs import runner
from arena.suite_runs.actions import start_run
from arena.suite_runs.models import SuiteJudgement
from tests.arena.api.conformance import assert_conforms
from tests.arena.factories import finish, suite
from tests.arena.suite_runs.running import live, run_to_end

pytestmark = pytest.mark.django_db

PROMPTS = [f"Name the capital of country number {i}." for i in range(9)]
SENTENCE = ("This judge picked the answer shown first in 18 of 18 readings: "
            "its verdicts say nothing about the answers.")


@pytest.fixture
def always_a(owner, catalogue):
    """A finished round robin of two contestants on nine prompts, judged by catalogue[2], whose
    every reply is {"verdict": "A"}: nine pairs, eighteen readings, each naming the answer shown first."""
    run = start_run(owner, suite=suite(owner, *PROMPTS), contestants=catalogue[:2], judge_model=catalogue[2])
    run_to_end(run, verdict="A")
    run.refresh_from_db()
    assert run.state == "done" and run.verdicts().count() == 9
    return run


def text(response) -> str:
    assert response.status_code == 200
    return html_lib.unescape(response.content.decode())


def test_the_run_marks_an_always_a_judge_unreliable_in_words(client, owner, always_a, catalogue):
    client.force_login(owner)
    page = text(client.get(always_a.get_absolute_url()))
    judge = catalogue[2]
    # The headline and the table read the same counts: 0 of 9 pairs, never "too few pairs" beside it.
    assert "Judge agreed with itself on 0 of 9 pairs (0 %)" in page
    row = re.search(rf'<tr data-judge="{judge.slug}" data-verdict="unreliable"[^>]*>(.*?)</tr>', page, re.S)
    assert row, "the judge's row is not marked unreliable"
    cells = dict(re.findall(r'<td class="([a-z-]+)">(.*?)</td>', row.group(1), re.S))
    assert cells["self-consistency"] == "0 of 9 (0%; 95%: 0%–30%)"
    assert cells["position-bias"] == "18 of 18 (100%; 95%: 82%–100%)"
    assert "too few pairs" not in cells["self-consistency"] + cells["position-bias"] + cells["tie-rate"]
    assert f'<p class="judge-unreliable warning" role="note" data-judge="{judge.slug}">' in page
    assert SENTENCE in page
    # Its verdicts (nine ties) are not plotted as results unless asked for.
    assert 'id="charts-left-out"' in page and 'class="chart-svg' not in page
    assert "?unreliable=include" in page


def test_the_run_shows_the_charts_of_an_unreliable_judge_on_request_labelled(client, owner, always_a, catalogue):
    client.force_login(owner)
    page = text(client.get(always_a.get_absolute_url() + "?unreliable=include"))
    assert 'id="charts-unreliable"' in page and "marked unreliable:" in page
    assert "Quality against speed and memory" in page and 'id="charts-left-out"' not in page


def test_the_leaderboard_leaves_an_unreliable_judges_verdicts_out_unless_asked(client, owner, always_a, catalogue):
    judge = catalogue[2]
    assert records.unreliable_judges() == {judge.slug}
    assert records.battle_records(source="judge") == []
    assert len(records.battle_records(source="judge", unreliable=True)) == 9
    client.force_login(owner)
    page = text(client.get(reverse("leaderboard")))
    assert "9 verdicts of judges marked unreliable are left out." in page
    assert f'<li data-judge="{judge.slug}" data-verdict="{reliability.UNRELIABLE}">' in page and SENTENCE in page
    shown = text(client.get(reverse("leaderboard") + "?unreliable=include"))
    assert "verdicts of judges marked unreliable are left out" not in shown
    assert judge.label in shown


def test_a_steady_judge_is_not_left_out(client, owner, catalogue):
    # "A" when the left answer is shown first and "B" when the right one is: the same answer both ways.
    run = start_run(owner, suite=suite(owner, *PROMPTS, "One more?"), contestants=catalogue[:2],
                    judge_model=catalogue[2])
    while run.live:
        runner.step(run)
        orders = dict(SuiteJudgement.objects.filter(run=run).values_list("generation_id", "order"))
        for gen in live(run):
            order = orders.get(gen.id)
            letter = "A" if order == "left_first" else "B"
            finish(gen, f'{{"verdict": "{letter}", "reason": "clearer"}}' if order else f"Answer of {gen.model.slug}")
        run.refresh_from_db()
    assert records.unreliable_judges() == frozenset()
    assert len(records.battle_records(source="judge")) == 10
    client.force_login(owner)
    page = text(client.get(run.get_absolute_url()))
    assert f'<tr data-judge="{catalogue[2].slug}" data-verdict="reliable"' in page
    assert 'id="charts-left-out"' not in page


def test_the_api_gives_the_verdict_with_its_counts_as_described(client, token, always_a, catalogue):
    data = client.get(f"/api/v1/suite-runs/{always_a.id}", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert_conforms(data, "/api/v1/suite-runs/{id}")
    [judge] = data["judge_reliability"]["judges"]
    assert judge["verdict"] == "unreliable" and judge["sentence"] == SENTENCE
    assert judge["first"]["count"] == judge["first"]["total"] == 18 and judge["first"]["interval"][0] > 0.8
    assert data["judge_agreement"] == {"agreed": 0, "total": 9, "percent": 0}
