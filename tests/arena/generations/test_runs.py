"""The run registry (arena/generations/runs.py), the start and cancel services
(arena/generations/services.py) and the migration that filled the run of older generations.

A kind registered here with a fake start shows that the line, the sweeper and `visible()` ask
the registry, not a feature they know of; the passes run on the real database and Redis."""

from __future__ import annotations

import importlib
import uuid
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from arena import streams
from arena.battles.models import Battle
from arena.generations import admission, lifecycle, runs, services
from arena.generations import sweeper as sw
from arena.generations.models import Generation
from arena.generations.services import GenerationRequest
from arena.suite_runs import runner
from arena.suite_runs.actions import start_run
from arena.suite_runs.models import SuiteAnswer, SuiteJudgement
from inference import protocol as p
from tests.arena.factories import PARAMS, comparison, generation, suite
from tests.arena.suite_runs.running import end_all

S = Generation.Status
PAIR = "test_pair"
LONE = "test_lone"


class Started:
    """A kind's fake start and ending hook: what they were called with."""

    def __init__(self):
        self.started: list[str] = []
        self.ended: list[str] = []

    def start(self, ident: str) -> None:
        self.started.append(ident)

    def on_ended(self, gen: Generation) -> None:
        self.ended.append(str(gen.id))


@pytest.fixture
def kinds(monkeypatch):
    """Two test kinds, registered for this test only: a grouped pair that hides its generations
    tagged "secret", and a lone one."""
    monkeypatch.setattr(runs, "_kinds", dict(runs._kinds))
    pair, lone = Started(), Started()
    runs.register(runs.RunKind(PAIR, start=pair.start, grouped=True, on_ended=pair.on_ended,
                               hidden=(Q(run_kind=PAIR, tag="secret"),)))
    runs.register(runs.RunKind(LONE, start=lone.start))
    return SimpleNamespace(pair=pair, lone=lone)


@pytest.fixture
def line(redis_client, settings):
    settings.ARENA_MAX_CONCURRENT_GENERATIONS = 10
    return admission


def requests(model, n: int, **fields) -> list[GenerationRequest]:
    return [GenerationRequest(model=model, prompt=f"Prompt {i}", params=PARAMS, **fields) for i in range(n)]


def start(owner, model, kind: str, n: int = 1, run_id=None, **fields) -> list[Generation]:
    return services.start(owner, requests(model, n, **fields), origin=Generation.Origin.API, kind=kind,
                          run_id=run_id)


# --- the start service -----------------------------------------------------------------------
def test_start_creates_queued_rows_of_the_run_and_submits_once_per_transaction(
        owner, smollm, kinds, django_capture_on_commit_callbacks):
    run_id = uuid.uuid4()
    with django_capture_on_commit_callbacks() as callbacks, transaction.atomic():
        pair = start(owner, smollm, PAIR, 2, run_id=run_id, tag="maths")
        lone = start(owner, smollm, LONE)
    assert len(callbacks) == 1  # two starts, one pass of the line
    assert [(g.run_kind, g.run_id, g.status, g.tag) for g in pair] == [(PAIR, run_id, S.QUEUED, "maths")] * 2
    assert (lone[0].run_kind, lone[0].run_id) == (LONE, None)


def test_start_copies_the_typed_request(owner, smollm, kinds):
    history = ({"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"})
    [gen] = start(owner, smollm, LONE, system_prompt="Be brief.", history=history)
    gen.refresh_from_db()
    assert (gen.system_prompt, gen.history, gen.params, gen.owner, gen.model) == (
        "Be brief.", list(history), PARAMS, owner, smollm)


def test_a_kind_nobody_registered_is_refused_before_anything_is_created(owner, smollm):
    with pytest.raises(LookupError, match="nobody_registered"):
        start(owner, smollm, "nobody_registered")
    assert not Generation.objects.exists()


def test_the_apps_register_every_kind_they_create():
    names = {kind.name for kind in runs.kinds()}
    assert {runs.PLAYGROUND, runs.API, runs.OPENAI, runs.PROBE, Battle.RUN_KIND, runner.ANSWER_KIND,
            runner.JUDGEMENT_KIND} <= names
    assert runs.get(Battle.RUN_KIND).grouped and not runs.get(runs.PLAYGROUND).grouped


def test_a_comparison_is_one_battle_run(owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[1], texts=None)
    assert {(g.run_kind, g.run_id) for _side, g in battle.sides} == {(Battle.RUN_KIND, battle.id)}


# --- the line and the sweeper ask the registry ------------------------------------------------
def test_the_line_starts_a_grouped_run_once_and_a_lone_one_by_its_generation(owner, smollm, kinds, line):
    run_id = uuid.uuid4()
    start(owner, smollm, PAIR, 2, run_id=run_id)
    [lone] = start(owner, smollm, LONE)
    assert line.admit_waiting() == 2
    assert kinds.pair.started == [str(run_id)] and kinds.lone.started == [str(lone.id)]
    assert not Generation.objects.filter(admitted_at__isnull=True).exists()


def test_a_grouped_run_missing_a_generation_is_ended_and_its_kind_told(owner, smollm, kinds, line):
    run_id = uuid.uuid4()
    first, second = start(owner, smollm, PAIR, 2, run_id=run_id)
    second.finish(S.CANCELLED, text="")  # the other side was stopped before the pass
    assert line.admit_waiting() == 0
    first.refresh_from_db()
    assert first.status == S.FAILED and first.failure_reason == lifecycle.HALF_A_BATTLE
    assert kinds.pair.started == [] and kinds.pair.ended == [str(first.id)]


def test_the_sweeper_requeues_a_grouped_run_through_its_kind_and_tells_it_what_it_ended(
        owner, smollm, kinds, redis_client):
    policy = sw.Policy(watch_ttl_s=15, queue_grace_s=60, queue_timeout_s=900)
    now = timezone.now().timestamp()
    clock = SimpleNamespace(now=now)
    sweeper = sw.Sweeper(redis_client, policy, clock=lambda: clock.now)
    run_id = uuid.uuid4()
    pair = start(owner, smollm, PAIR, 2, run_id=run_id)
    [running] = start(owner, smollm, LONE)
    admitted = timezone.now() - timedelta(seconds=120)
    Generation.objects.filter(id__in=[g.id for g in pair]).update(admitted_at=admitted)
    Generation.objects.filter(id=running.id).update(admitted_at=admitted, status=S.RUNNING)
    sweeper.sweep()
    clock.now += 15
    assert sweeper.sweep() == {sw.REQUEUE: 1, sw.FAIL: 1}
    assert kinds.pair.started == [str(run_id)]  # the run, once, not each generation
    assert kinds.lone.ended == []  # a lone kind without a hook: nothing to tell
    running.refresh_from_db()
    assert running.status == S.FAILED


# --- what pages may show ------------------------------------------------------------------------
def test_visible_leaves_out_what_a_kind_hides(owner, smollm, kinds):
    [hidden] = start(owner, smollm, PAIR, run_id=uuid.uuid4(), tag="secret")
    [shown] = start(owner, smollm, PAIR, run_id=uuid.uuid4(), tag="open")
    assert set(Generation.objects.visible().values_list("id", flat=True)) == {shown.id}
    assert Generation.objects.filter(id=hidden.id).exists()


def test_a_blind_battles_answers_are_hidden_until_revealed(owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[1], blind=True)
    ids = {battle.left_id, battle.right_id}
    assert not ids & set(Generation.objects.visible().values_list("id", flat=True))
    Battle.objects.filter(id=battle.id).update(revealed=True)
    assert ids <= set(Generation.objects.visible().values_list("id", flat=True))


def test_the_tags_given_come_from_every_kind_of_run(owner, catalogue):
    generation(owner, catalogue[0], tag="solo")
    comparison(owner, catalogue[0], catalogue[1], tag="paired")
    assert Generation.objects.tags_given(owner) == ["paired", "solo"]


# --- cancelling ---------------------------------------------------------------------------------
def test_cancel_writes_each_key_with_the_reason_and_the_streams_lifetime(redis_client):
    ids = [uuid.uuid4(), uuid.uuid4()]
    services.cancel(ids, "user")
    keys = [streams.keys().cancel(str(gen_id)) for gen_id in ids]
    assert [redis_client.get(key) for key in keys] == [b"user", b"user"]
    assert all(0 < redis_client.ttl(key) <= p.STREAM_TTL_S for key in keys)


async def test_acancel_is_the_same_write_from_async_code(redis_client):
    gen_id = uuid.uuid4()
    await services.acancel([gen_id], "abandoned")
    assert redis_client.get(streams.keys().cancel(str(gen_id))) == b"abandoned"


# --- the migration that filled older rows --------------------------------------------------------
def test_the_migration_fills_the_run_of_older_generations(owner, catalogue):
    fill = importlib.import_module("arena.generations.migrations.0009_fill_generation_run").fill
    web = generation(owner, catalogue[0], text="Blue.")
    api = generation(owner, catalogue[0], text="Blue.", origin=Generation.Origin.API)
    battle = comparison(owner, catalogue[0], catalogue[1], origin=Generation.Origin.API)
    run = start_run(owner, suite=suite(owner, "One?"), contestants=catalogue[:2], judge_model=catalogue[2])
    while not SuiteJudgement.objects.filter(run=run).exists():
        runner.step(run)
        end_all(run)
    Generation.objects.update(run_kind=runs.PLAYGROUND, run_id=None)  # as AddField left them

    fill(apps, SimpleNamespace(connection=connection))

    def run_of(gen_id):
        return Generation.objects.values_list("run_kind", "run_id").get(id=gen_id)

    assert run_of(web.id) == (runs.PLAYGROUND, None)
    assert run_of(api.id) == (runs.API, None)
    assert run_of(battle.left_id) == run_of(battle.right_id) == (Battle.RUN_KIND, battle.id)
    answers = SuiteAnswer.objects.filter(run=run).values_list("generation_id", flat=True)
    judgements = SuiteJudgement.objects.filter(run=run).values_list("generation_id", flat=True)
    assert {run_of(gen_id) for gen_id in answers} == {(runner.ANSWER_KIND, run.id)}
    assert {run_of(gen_id) for gen_id in judgements} == {(runner.JUDGEMENT_KIND, run.id)}
