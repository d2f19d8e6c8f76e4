"""A suite run's answer cache (arena/generations/cache.py): the same greedy request twice in a run
generates once; a re-run asked to reuse earlier answers generates nothing (no worker job, no place
in the line) and says so on its page, in its exports and in the API. Runs are driven as in
test_runner.py: each step, then what it started ended as its run would end it."""

from __future__ import annotations

import csv
import io

import pytest

from arena.generations import admission
from arena.generations.models import Generation
from arena.suite_runs import runner
from arena.suite_runs.actions import start_run
from arena.suite_runs.models import SuiteAnswer, SuiteJudgement, SuiteRun
from tests.arena.api_client import api
from tests.arena.factories import suite
from tests.arena.suite_runs.running import end_all, live, run_to_end

pytestmark = pytest.mark.django_db

GREEDY = {"temperature": 0.0}


def generations(run: SuiteRun) -> list[Generation]:
    return list(Generation.objects.filter(run_id=run.id))


def judged(owner, three, prompts=("One?", "Two?"), **kwargs) -> SuiteRun:
    return start_run(owner, suite=suite(owner, *prompts), contestants=three[:2], judge_model=three[2],
                     params=kwargs.pop("params", GREEDY), **kwargs)


def rerun(first: SuiteRun, **kwargs) -> SuiteRun:
    return start_run(first.owner, suite=first.suite, contestants=list(first.contestants), judge_model=first.judge,
                     params=first.params, **kwargs)


def test_the_same_prompt_twice_in_a_run_generates_once(owner, three, settings):
    settings.ARENA_SUITE_IN_FLIGHT = 8
    run = start_run(owner, suite=suite(owner, "Same?", "Same?"), contestants=three[:2], params=GREEDY)
    runner.step(run)
    assert len(live(run)) == 2  # one per contestant: each twin waits for the other's answer
    run_to_end(run)
    answers = list(SuiteAnswer.objects.filter(run=run).select_related("generation"))
    assert len(answers) == 4 and run.state == SuiteRun.State.DONE
    cached = [a.generation for a in answers if a.generation.cached]
    assert len(cached) == 2
    for copy in cached:
        assert copy.cached_from.run_id == run.id and copy.cached_from.model_id == copy.model_id
        assert copy.text == copy.cached_from.text and copy.admitted_at is None


def test_a_rerun_asked_to_reuse_generates_nothing(owner, three):
    first = judged(owner, three)
    run_to_end(first)
    first_ids = {gen.id for gen in generations(first)}
    second = rerun(first, reuse_answers=True)
    steps = 0
    while second.live:
        runner.step(second)
        assert end_all(second) == 0  # nothing ever ran: no answer nor judgement was left to end
        steps += 1
        assert steps < 20
    assert second.state == SuiteRun.State.DONE and second.done == second.total == first.total
    assert admission.admit_waiting() == 0  # nothing waits for the line: no task, no job to a worker
    reused = generations(second)
    assert len(reused) == len(first_ids) == 4 + 4  # 4 answers, 2 pairs judged in both orders
    for gen in reused:
        assert gen.status == Generation.Status.DONE and gen.cached_from_id in first_ids
        assert gen.admitted_at is None  # never in line: a generation reaches a worker only once admitted
    assert SuiteJudgement.objects.filter(run=second).count() == 4
    assert [r["wins"] for r in second.results()] == [r["wins"] for r in first.results()]


def test_a_rerun_not_asked_generates_again(owner, three):
    first = judged(owner, three)
    run_to_end(first)
    second = rerun(first)
    runner.step(second)
    assert len(live(second)) == 4 and not any(gen.cached for gen in generations(second))


def test_a_sampled_run_is_never_reused(owner, three):
    first = judged(owner, three, params={"temperature": 0.7})
    run_to_end(first)
    second = rerun(first, reuse_answers=True)
    runner.step(second)
    answers = generations(second)
    assert len(answers) == 4 and not any(gen.cached for gen in answers)


def test_a_contestant_whose_version_changed_answers_anew(owner, three):
    first = judged(owner, three)
    run_to_end(first)
    changed = three[1]
    changed.precision = "fp32" if changed.precision != "fp32" else "bf16"  # another way of serving it
    changed.save()
    second = rerun(first, reuse_answers=True)
    runner.step(second)
    by_model = {}
    for gen in generations(second):
        by_model.setdefault(gen.model_id, []).append(gen.cached)
    assert by_model == {three[0].id: [True, True], changed.id: [False, False]}


def test_a_failed_answer_is_not_reused(owner, three):
    first = judged(owner, three)
    run_to_end(first, fail=lambda gen: gen.model_id == three[1].id and gen.prompt == "Two?")
    second = rerun(first, reuse_answers=True)
    runner.step(second)
    fresh = [gen for gen in generations(second) if not gen.cached]
    assert [(gen.model_id, gen.prompt) for gen in fresh] == [(three[1].id, "Two?")]


def test_the_mark_on_the_run_page_the_generation_page_history_and_exports(client, owner, three):
    first = judged(owner, three)
    run_to_end(first)
    second = rerun(first, reuse_answers=True)
    run_to_end(second)
    client.force_login(owner)
    page = client.get(second.get_absolute_url()).content.decode()
    assert page.count('class="cached-mark"') == 4  # each answer of the run
    assert 'class="cached-mark"' not in client.get(first.get_absolute_url()).content.decode()
    history = client.get("/history/suite-runs/").content.decode()
    assert 'data-cached-count="8"' in history.split(f'data-id="{second.id}"')[1].split("</tr>")[0]
    assert "data-cached-count" not in history.split(f'data-id="{first.id}"')[1].split("</tr>")[0]
    listed = client.get("/suite-runs/").content.decode()  # 4 answers, 4 readings of the judge
    assert 'data-cached-count="8"' in listed.split(f'data-run="{second.id}"')[1].split("</li>")[0]

    copy = SuiteAnswer.objects.filter(run=second).select_related("generation").first().generation
    detail = client.get(copy.get_absolute_url()).content.decode()
    assert f'data-cached="{copy.cached_from_id}"' in detail and copy.cached_from.get_absolute_url() in detail

    rows = list(csv.DictReader(io.StringIO(b"".join(client.get(f"/suite-runs/{second.id}/export.csv")
                                                    .streaming_content).decode())))
    assert len(rows) == 4 and {r["cached"] for r in rows} == {"true"}
    first_answers = {str(a.generation_id) for a in SuiteAnswer.objects.filter(run=first)}
    assert {r["cached_from"] for r in rows} == first_answers
    first_rows = csv.DictReader(io.StringIO(b"".join(client.get(f"/suite-runs/{first.id}/export.csv")
                                                     .streaming_content).decode()))
    assert {(r["cached"], r["cached_from"]) for r in first_rows} == {("false", "")}


def test_the_api_takes_reuse_answers_and_shows_the_mark(client, token, owner, three):
    first = judged(owner, three)
    run_to_end(first)
    body = {"suite": str(first.suite_id), "contestants": [m.slug for m in three[:2]], "judge": three[2].slug,
            "params": GREEDY}
    refused = api(client, "post", "/api/v1/suite-runs", token, {**body, "reuse_answers": "yes"})
    assert refused.status_code == 400 and "reuse_answers" in refused.json()["error"]["fields"]
    created = api(client, "post", "/api/v1/suite-runs", token, {**body, "reuse_answers": True})
    assert created.status_code == 201 and created.json()["reuse_answers"] is True
    second = SuiteRun.objects.get(id=created.json()["id"])
    run_to_end(second)
    copy = SuiteAnswer.objects.filter(run=second).first().generation
    data = api(client, "get", f"/api/v1/generations/{copy.id}", token).json()
    assert data["cached"] is True and data["cached_from"] == str(copy.cached_from_id)
    original = api(client, "get", f"/api/v1/generations/{copy.cached_from_id}", token).json()
    assert original["cached"] is False and original["cached_from"] is None


def test_the_form_offers_reuse_and_the_run_keeps_it(client, owner, three):
    client.force_login(owner)
    s = suite(owner, "One?")
    assert 'name="reuse_answers"' in client.get("/suite-runs/new/").content.decode()
    data = {"suite": s.id, "contestant_1": three[0].slug, "contestant_2": three[1].slug, "format": "round_robin",
            "temperature": "0", "reuse_answers": "on"}
    response = client.post("/suite-runs/new/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert SuiteRun.objects.get(suite=s).reuse_answers is True
