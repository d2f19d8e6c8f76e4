"""The suite runner's steps on a real database. The generations it starts are ended here as their
run would end them (tests/arena/factories.finish): the engines and the Celery path are the same
as every other generation's, tested elsewhere, and end to end in tests/live/test_suite_runs.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from arena.battles.models import Battle
from arena.generations.models import Generation
from arena.suite_runs import judge, runner
from arena.suite_runs.actions import RunError, start_run
from arena.suite_runs.models import SuiteAnswer, SuiteJudgement, SuiteRun
from tests.arena.factories import finish, suite
from tests.arena.suite_runs.running import end_all, live, run_to_end

pytestmark = pytest.mark.django_db


def test_round_robin_judged_by_a_model_records_every_pair_once(owner, three, settings):
    settings.ARENA_SUITE_IN_FLIGHT = 3
    s = suite(owner, "One?", "Two?", tag="maths")
    run = start_run(owner, suite=s, contestants=three, judge_model=three[0])
    assert run.total == 0 and run.state == "running"
    runner.step(run)
    assert len(live(run)) == 3  # the window
    assert run.total == 2 * 3 + 2 * 3 * 2
    run_to_end(run)
    run.refresh_from_db()
    assert run.state == SuiteRun.State.DONE and run.done == run.total and run.finished_at
    battles = Battle.objects.filter(mode=Battle.Mode.SUITE)
    assert battles.count() == 6
    battle = battles.first()
    # "A" in both orders: the left answer first, then the right one first: the orders disagree.
    assert battle.outcome == "tie" and battle.judge == three[0] and battle.tag == "maths"
    assert [j["order"] for j in battle.judgements] == ["left_first", "right_first"]
    assert [j["verdict"] for j in battle.judgements] == ["left", "right"]
    assert battle.judge_template_version == judge.template_version(judge.DEFAULT_TEMPLATE)
    assert SuiteAnswer.objects.filter(run=run).count() == 6
    assert SuiteJudgement.objects.filter(run=run).count() == 12
    results = run.results()
    assert [r["model"] for r in results] == list(three)
    assert all((r["wins"], r["losses"], r["ties"], r["answered"], r["failed"]) == (0, 0, 4, 2, 0) for r in results)


def test_results_count_wins_failures_and_validity(owner, three):
    s = suite(owner, {"prompt": "A word?", "regex": "[a-z]+"})
    run = start_run(owner, suite=s, contestants=three, judge_model=three[0])
    fail_third = lambda gen: gen.model_id == three[2].id and gen.prompt == "A word?"  # noqa: E731
    runner.step(run)
    for gen in live(run):
        if fail_third(gen):
            finish(gen, "", status=Generation.Status.FAILED)
        else:
            finish(gen, "yes" if gen.model_id == three[0].id else "No!")
            Generation.objects.filter(id=gen.id).update(output_valid=gen.model_id == three[0].id)
    run_to_end(run, verdict="B", fail=fail_third)  # "B" in both orders: they disagree, a tie
    by_model = {r["model"]: r for r in run.results()}
    assert by_model[three[2]]["failed"] == 1 and by_model[three[2]]["answered"] == 0
    assert by_model[three[0]]["validity_rate"] == 1.0 and by_model[three[1]]["validity_rate"] == 0.0
    assert by_model[three[2]]["validity_rate"] is None
    assert sum(r["wins"] + r["losses"] + r["ties"] for r in by_model.values()) == 2  # one pair judged


def test_the_judge_sees_both_answers_in_each_order_and_is_constrained(owner, three):
    s = suite(owner, {"prompt": "Capital of France?", "reference": "Paris"})
    run = start_run(owner, suite=s, contestants=three[:2], judge_model=three[2])
    runner.step(run)
    end_all(run)
    runner.step(run)
    prompts = {row.order: row.generation for row in SuiteJudgement.objects.filter(run=run)}
    first, second = prompts["left_first"].prompt, prompts["right_first"].prompt
    left, right = (a.generation.text for a in SuiteAnswer.objects.filter(run=run).order_by("contestant__id"))
    assert first.index(left) < first.index(right) and second.index(right) < second.index(left)
    assert "Paris" in first.split("[Reference answer]")[1]
    assert prompts["left_first"].params["json_schema"] == judge.VERDICT_SCHEMA
    assert prompts["left_first"].params["temperature"] == 0.0


def test_answers_carry_the_prompt_constraint_and_system_prompt(owner, three):
    s = suite(owner, {"prompt": "A word?", "regex": "[a-z]+", "system_prompt": "Be brief."})
    run = start_run(owner, suite=s, contestants=three[:2], params={"max_new_tokens": 9})
    runner.step(run)
    gen = live(run)[0]
    assert gen.params["regex"] == "[a-z]+" and gen.params["max_new_tokens"] == 9
    assert gen.system_prompt == "Be brief." and gen.origin == Generation.Origin.SUITE


def test_a_failed_answer_is_tried_again_and_nothing_done_runs_twice(owner, three):
    s = suite(owner, "One?")
    run = start_run(owner, suite=s, contestants=three[:2])
    runner.step(run)
    first, second = live(run)
    finish(first, "ok")
    finish(second, "", status=Generation.Status.FAILED)  # its worker died
    runner.step(run)
    again = live(run)
    assert [g.model_id for g in again] == [second.model_id]
    row = SuiteAnswer.objects.get(run=run, contestant=second.model)
    assert row.attempts == 2 and row.generation == again[0]
    finish(again[0], "ok too")
    runner.step(run)
    run.refresh_from_db()
    assert run.state == SuiteRun.State.DONE  # no judge: the answers are the run
    assert Generation.objects.filter(origin=Generation.Origin.SUITE).count() == 3


def test_knockout_judges_a_bracket_per_prompt(owner, catalogue):
    s = suite(owner, "One?")
    run = start_run(owner, suite=s, contestants=catalogue[:4], format="knockout", judge_model=catalogue[0])
    run_to_end(run, verdict="A")  # always the first shown: every pair a tie, settled by the run's coin
    assert Battle.objects.filter(mode=Battle.Mode.SUITE).count() == 3


def test_cancel_stops_the_run_and_its_live_generations(owner, three):
    from arena import streams

    run = start_run(owner, suite=suite(owner, "One?"), contestants=three[:2])
    runner.step(run)
    runner.cancel(run)
    run.refresh_from_db()
    assert run.state == SuiteRun.State.CANCELLED
    assert all(streams.client().exists(streams.keys().cancel(str(g.id))) for g in live(run))
    before = Generation.objects.count()
    runner.step_run(str(run.id), run.chain)  # a step still queued does nothing
    assert Generation.objects.count() == before


def test_only_the_newest_chain_goes_on(owner, three):
    run = start_run(owner, suite=suite(owner, "One?"), contestants=three[:2])
    old = run.chain
    runner.start_chain(run)
    runner.step_run(str(run.id), old)
    assert not live(run)  # the old chain's step did nothing


def test_the_kicker_restarts_a_run_that_stopped_stepping(owner, three, django_capture_on_commit_callbacks):
    run = start_run(owner, suite=suite(owner, "One?"), contestants=three[:2])
    fresh = start_run(owner, suite=suite(owner, "Two?"), contestants=three[:2])
    SuiteRun.objects.filter(id=run.id).update(stepped_at=timezone.now() - timedelta(seconds=runner.STALLED_AFTER_S + 1))
    chain = SuiteRun.objects.get(id=run.id).chain
    with django_capture_on_commit_callbacks() as callbacks:
        assert runner.kick() == 1
    assert len(callbacks) == 1
    assert SuiteRun.objects.get(id=run.id).chain != chain
    assert SuiteRun.objects.get(id=fresh.id).chain == fresh.chain


@pytest.mark.parametrize("change, message", [
    ({"contestants": 0}, "Pick 1 to 16 contestants"),
    ({"format": "elimination"}, "round_robin, knockout, adaptive or swiss"),
    ({"format": "swiss"}, "A Swiss run needs 8 or more contestants, not 2"),
    ({"format": "adaptive", "budget": 1}, "The budget is 2 to"),
    ({"judge_template": "Judge {question} {answer_a}"}, "{answer_b}"),
    ({"judge_template": "Judge {question} {answer_a} {answer_b} {name}"}, "unknown placeholders"),
    ({"params": {"temperature": 9}}, "temperature"),
])
def test_a_run_that_cannot_start_says_why(owner, three, change, message):
    kwargs = {"suite": suite(owner, "One?"), "contestants": three[:2], "judge_model": three[2]}
    if "contestants" in change:
        kwargs["contestants"] = three[: change.pop("contestants")]
    kwargs.update(change)
    with pytest.raises(RunError, match=message.replace("{", r"\{").replace("}", r"\}")):
        start_run(owner, **kwargs)
    assert not SuiteRun.objects.exists()


def test_a_step_finding_the_run_locked_tries_again_later(owner, three, monkeypatch):
    from arena import streams

    run = start_run(owner, suite=suite(owner, "One?"), contestants=three[:2])
    later = []
    monkeypatch.setattr(runner.step_run, "apply_async", lambda args, countdown: later.append((args, countdown)))
    lock = streams.keys().suite_run_lock(str(run.id))
    streams.client().set(lock, "someone", ex=5)
    try:
        runner.step_run(str(run.id), run.chain)
    finally:
        streams.client().delete(lock)
    assert not live(run) and later == [((str(run.id), run.chain), runner.STEP_EVERY_S)]
    runner.step_run(str(run.id), run.chain)
    assert len(live(run)) == 2 and len(later) == 2  # it stepped, and queued its next step


def test_the_next_contestants_model_is_warmed_while_the_first_answers(owner, three, settings):
    import json

    from arena import streams

    settings.ARENA_SUITE_IN_FLIGHT = 2
    inbox = streams.keys().orchestrator_inbox()
    streams.client().delete(inbox)
    run = start_run(owner, suite=suite(owner, "One?", "Two?"), contestants=three[:2], judge_model=three[2])
    runner.step(run)
    messages = [json.loads(m) for m in streams.client().lrange(inbox, 0, -1)]
    assert [(m["prewarm"], [s["slug"] for s in m["specs"]]) for m in messages] == [(True, [three[1].slug])]
    streams.client().delete(inbox)


def test_once_the_last_answers_run_every_judge_of_a_jury_is_warmed(owner, catalogue, settings):
    import json

    from arena import streams

    settings.ARENA_SUITE_IN_FLIGHT = 2
    inbox = streams.keys().orchestrator_inbox()
    streams.client().delete(inbox)
    jury = catalogue[2:5]
    run = start_run(owner, suite=suite(owner, "One?"), contestants=catalogue[:2], judges=jury)
    runner.step(run)
    messages = [json.loads(m) for m in streams.client().lrange(inbox, 0, -1)]
    assert [(m["prewarm"], [s["slug"] for s in m["specs"]]) for m in messages] == [
        (True, [model.slug for model in jury])]
    streams.client().delete(inbox)


def test_a_cancel_landing_during_a_step_reaches_what_the_step_started(owner, three, monkeypatch):
    from arena import streams

    run = start_run(owner, suite=suite(owner, "One?"), contestants=three[:2])
    original = runner._start_answer

    def start_then_cancelled_elsewhere(*args):
        original(*args)
        SuiteRun.objects.filter(id=run.id).update(state=SuiteRun.State.CANCELLED)  # the cancel's write

    monkeypatch.setattr(runner, "_start_answer", start_then_cancelled_elsewhere)
    runner.step(run)
    started = live(run)
    assert started and all(streams.client().exists(streams.keys().cancel(str(g.id))) for g in started)
