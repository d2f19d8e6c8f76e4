"""Carrying out suite runs, a step at a time, each step from what the database holds.

A step reads the run's answers, judgements and verdicts, asks arena.suite_runs.plan what to do
next, and does it in one transaction: it creates the generations to start (ordinary
`Generation`s with origin "suite", run by arena.generations' own task, followed, swept and
stored like any other), records the verdicts of pairs all of whose judgements are in (a judged
`Battle`: mode "suite", the run's (first) judge, its template's version and every raw judgement:
each judge's two, with the judge's slug and one-line reason; its outcome the jury's majority,
arena.battles.judging), and the progress. It also checks the answers that landed since the last
step (arena.suite_runs.checking.check_answers: each done answer's checks, its suite's defaults
then its prompt's own, evaluated and stored on the answer), within CHECK_BUDGET_S, and grades the
rubric checks that wait (arena.suite_runs.rubric.step: the judges' generations started in the room
the answers and judgements leave, each grade stored once it lands). A step holds
no Celery thread while generations run: it queues the next step a couple of seconds later
(`step_run`), and a chain of steps carries a token (`chain`) so only the newest chain goes on.
If the chain dies with its Celery worker, a periodic job of the orchestrator's loop
(arena/scheduler.py, as the generation sweeper) starts a new one for any running run that has
not stepped for `STALLED_AFTER_S`: the run resumes where the database says it is, nothing that
finished runs again, and a generation the killed worker was following is failed by the sweeper
and tried again (at most plan.MAX_ATTEMPTS generations per answer).
"""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from arena import streams
from arena.battles import fair
from arena.battles.judging import ORDERS, judgement
from arena.battles.models import Battle
from arena.generations import cache, runs, services, tasks
from arena.generations.models import Generation
from arena.generations.services import GenerationRequest
from arena.suites.models import SuitePrompt
from orchestration import client as orch

from . import checking, judge, plan, rubric
from .models import SuiteAnswer, SuiteJudgement, SuiteRun

log = logging.getLogger(__name__)
STEP_EVERY_S = 2
STALLED_AFTER_S = 30
# A step's time for checking the answers that landed (arena.suites.checks); what is left waits for
# the next step, and the run does not end before every done answer is checked.
CHECK_BUDGET_S = 10.0
KICK_EVERY_S = 5.0  # how often the orchestrator's loop looks for stalled runs (`kick`)
LOCK_TTL_S = 60

_SLOT_STATE: dict[str, str] = {Generation.Status.DONE: plan.DONE, Generation.Status.FAILED: plan.FAILED,
               Generation.Status.CANCELLED: plan.FAILED}


# Run kinds (arena/generations/runs.py): each answer and each judgement is a generation run of its
# own (run_id = the suite run), started by the generation core's task.
ANSWER_KIND = "suite_answer"
JUDGEMENT_KIND = "suite_judgement"


def register_run_kinds() -> None:
    """SuiteRunsConfig.ready() calls this."""
    runs.register(runs.RunKind(ANSWER_KIND, start=tasks.start_run))
    runs.register(runs.RunKind(JUDGEMENT_KIND, start=tasks.start_run, judging=True))
    rubric.register_run_kind()


def start_chain(run: SuiteRun) -> None:
    """A new chain of steps for `run` (any older chain stops at its next step)."""
    run.chain = secrets.token_hex(8)
    run.save(update_fields=["chain"])
    step_run.delay_on_commit(str(run.id), run.chain)


@shared_task(ignore_result=True, soft_time_limit=60, time_limit=90)
def step_run(run_id: str, chain: str) -> None:
    client = streams.client()
    lock = streams.keys().suite_run_lock(run_id)
    if not client.set(lock, chain, nx=True, ex=LOCK_TTL_S):
        # Another step holds the run (or a killed worker's step left its lock to expire): try
        # again shortly; a chain that is no longer the run's stops once it gets in.
        step_run.apply_async((run_id, chain), countdown=STEP_EVERY_S)
        return
    try:
        run = SuiteRun.objects.select_related("suite", "judge", "owner").filter(id=run_id, chain=chain).first()
        if run is None or not run.live:
            return
        step(run)
        if run.live:
            step_run.apply_async((run_id, chain), countdown=STEP_EVERY_S)
    finally:
        client.delete(lock)


def step(run: SuiteRun) -> plan.Plan:
    """One step of `run`: start what the plan says, record verdicts, note the progress."""
    prompts = {prompt.id: prompt for prompt in run.prompts()}
    contestants = {model.id: model for model in run.contestants}
    judges = run.judges
    state, generations = load_state(run, list(prompts), list(contestants), judges)
    grading_live = rubric.live(run)  # rubric grades share the run's window of live generations
    todo = plan.plan(state, settings.ARENA_SUITE_IN_FLIGHT - grading_live)
    # After reading the state: every answer it saw done is checked before the run may end.
    unchecked = checking.check_answers(run, budget_s=CHECK_BUDGET_S)
    with transaction.atomic():
        for prompt_id, model_id in todo.start_answers:
            _start_answer(run, prompts[prompt_id], contestants[model_id])
        for prompt_id, left, right, name in todo.start_judgements:
            _start_judgement(run, prompts[prompt_id], (contestants[left], contestants[right]), name,
                             generations, judges)
        for pair, outcome in todo.record:
            _record(run, pair, outcome, generations, judges)
        # The rubric checks' grades: in the room the answers and judgements left (after them).
        grading = rubric.step(run, settings.ARENA_SUITE_IN_FLIGHT - grading_live - _live(state)
                              - len(todo.start_answers) - len(todo.start_judgements), _generation)
        run.done, run.total, run.stepped_at = todo.done + grading.settled, todo.total + grading.total, timezone.now()
        fields = ["done", "total", "stepped_at"]  # not the state, unless it ends: a cancel meanwhile stands
        if todo.finished and not unchecked and not grading.waiting:
            run.state, run.finished_at, run.stop_reason = SuiteRun.State.DONE, timezone.now(), todo.stopped
            fields += ["state", "finished_at", "stop_reason"]
        run.save(update_fields=fields)  # what it started joins the line in one pass once this commits
    if (todo.start_answers or todo.start_judgements) and \
            SuiteRun.objects.filter(id=run.id, state=SuiteRun.State.CANCELLED).exists():
        _cancel_live(run)  # a cancel landed during this step, after it listed the live generations
    _prewarm(run, state, contestants, todo)
    return todo


def _live(state: plan.RunState) -> int:
    return sum(slot.state == plan.LIVE for slot in (*state.answers.values(), *state.judgements.values()))


def _prewarm(run: SuiteRun, state: plan.RunState, contestants: dict, todo: plan.Plan) -> None:
    """Warm the next contestant's model (or the judge's, once the last answers run) in free
    memory while the current ones answer, as a tournament warms its next match."""
    if not run.live:
        return
    for key in todo.start_answers:  # what this step started is under way too
        state.answers[key] = plan.Slot(plan.LIVE, state.answer(key).attempts + 1)
    following = plan.upcoming(state)
    models = run.judges if following == plan.JUDGE else [contestants.get(following)]  # a jury: every judge
    specs = [model.spec() for model in models if model is not None]
    if specs:
        orch.request_lease(streams.client(), streams.keys(), f"prewarm:suite:{run.id}", specs, prewarm=True)


def load_state(run: SuiteRun, prompts: list[int], contestants: list[int],
               judges: list | None = None) -> tuple[plan.RunState, dict]:
    """The planner's view of `run`, and the generations it names: {("answer", prompt, model) or
    ("judgement", prompt, left, right, reading): Generation} (a reading: plan.reading)."""
    judges = run.judges if judges is None else judges
    number = {model.id: n for n, model in enumerate(judges, start=1)}
    generations: dict[tuple, Generation] = {}
    state = plan.RunState(prompts=prompts, contestants=contestants, format=run.format,
                          judged=run.judge_id is not None, seed=run.seed, budget=run.budget,
                          judges=max(1, len(judges)))
    for answer in SuiteAnswer.objects.filter(run=run).select_related("generation"):
        answer_key = (answer.prompt_id, answer.contestant_id)
        generations[("answer", *answer_key)] = answer.generation
        state.answers[answer_key] = plan.Slot(_slot_state(answer.generation), answer.attempts)
    for row in SuiteJudgement.objects.filter(run=run).select_related("generation"):
        judge_number = number.get(row.judge_id or run.judge_id)
        if judge_number is None:
            continue  # not a judge of this run (cannot happen: the run's judges never change)
        judgement_key = (row.prompt_id, row.left_id, row.right_id, plan.reading(row.order, judge_number))
        gen = row.generation
        generations[("judgement", *judgement_key)] = gen
        slot_state = _slot_state(gen)
        verdict = judge.verdict_for(row.order, gen.text) if slot_state == plan.DONE else ""
        state.judgements[judgement_key] = plan.Slot(slot_state, row.attempts, verdict)
    answer_of = {gen.id: key[1:] for key, gen in generations.items() if key[0] == "answer"}
    recorded = Battle.objects.filter(mode=Battle.Mode.SUITE, judge__isnull=False, left_id__in=list(answer_of))
    for left_id, right_id, outcome in recorded.values_list("left_id", "right_id", "outcome"):
        (prompt, left), (_, right) = answer_of[left_id], answer_of[right_id]
        state.verdicts[(prompt, left, right)] = outcome
    return state, generations


def _slot_state(gen: Generation) -> str:
    return _SLOT_STATE.get(gen.status, plan.LIVE)


def _start_answer(run: SuiteRun, prompt: SuitePrompt, model) -> None:
    # The run's one limit and the prompt's constraint, never a contestant's own (arena/battles/fair.py):
    # answers compared under different limits or stop rules are judged on their length.
    params = model.params_with_defaults({**fair.with_limit(run.params), **prompt.constraint_params},
                                        shared=True).to_dict()
    gen = _generation(run, ANSWER_KIND, model, prompt.prompt, params, system_prompt=prompt.system_prompt)
    if gen is None:
        return
    row, created = SuiteAnswer.objects.get_or_create(run=run, prompt=prompt, contestant=model,
                                                     defaults={"generation": gen})
    if not created:
        row.generation, row.attempts = gen, row.attempts + 1
        row.save(update_fields=["generation", "attempts"])


def _start_judgement(run: SuiteRun, prompt: SuitePrompt, models: tuple, name: str, generations: dict,
                     judges: list) -> None:
    left, right = (generations[("answer", prompt.id, m.id)] for m in models)
    order, number = plan.split_reading(name)
    first, second = (left, right) if order == "left_first" else (right, left)
    text = judge.render(run.judge_template, question=prompt.prompt, first=first.text, second=second.text,
                        reference=prompt.reference)
    assert judges, "only a judged run starts judgements"
    judge_model = judges[number - 1]
    params = judge_model.params_with_defaults(judge.JUDGE_PARAMS).to_dict()
    gen = _generation(run, JUDGEMENT_KIND, judge_model, text, params)
    if gen is None:
        return
    # A row from before juries names no judge: it is the first judge's.
    row = SuiteJudgement.objects.filter(run=run, prompt=prompt, left=models[0], right=models[1], order=order,
                                        judge__isnull=True).first() if number == 1 else None
    if row is not None:
        row.judge, row.generation, row.attempts = judge_model, gen, row.attempts + 1
        row.save(update_fields=["judge", "generation", "attempts"])
        return
    row, created = SuiteJudgement.objects.get_or_create(run=run, prompt=prompt, left=models[0], right=models[1],
                                                        order=order, judge=judge_model,
                                                        defaults={"generation": gen})
    if not created:
        row.generation, row.attempts = gen, row.attempts + 1
        row.save(update_fields=["generation", "attempts"])


def _generation(run: SuiteRun, kind: str, model, prompt: str, params: dict,
                system_prompt: str = "") -> Generation | None:
    """Its own run of `kind`, within the suite run's window: no per-user limit (the run checked it).
    An identical deterministic request's answer is reused (arena/generations/cache.py): this run's
    always, the owner's earlier runs' when the run asks. None: an identical request of this run is
    still generating; a later step reuses its answer instead of generating it twice."""
    if cache.twin_under_way(run.owner, cache.key(model, system_prompt, (), prompt, params), run.id):
        return None
    request = GenerationRequest(model=model, prompt=prompt, system_prompt=system_prompt, params=params,
                                tag=run.suite.tag)
    [gen] = services.start(run.owner, [request], origin=Generation.Origin.SUITE, kind=kind, run_id=run.id,
                           check_limits=False, reuse=cache.ANY_RUN if run.reuse_answers else cache.WITHIN_RUN,
                           team=run.team)
    return gen  # it joins the line when the step commits (`step`), unless it was reused: done already


def _record(run: SuiteRun, pair: plan.Pair, outcome: str, generations: dict, judges: list) -> None:
    """The judged verdict of a pair: a battle record of the two stored answers, with every
    judge's readings (its slug, the order shown, its raw text, verdict and reason). A reading
    that failed for good is stored as an empty text that says a tie."""
    prompt, left, right = pair
    readings = []
    for number, judge_model in enumerate(judges, start=1):
        for order in ORDERS:
            gen = generations.get(("judgement", prompt, left, right, plan.reading(order, number)))
            text = gen.text if gen is not None and gen.status == Generation.Status.DONE else ""
            readings.append(judgement(order, text, judge.verdict_for(order, text) if text else "tie",
                                      judge=judge_model.slug, reason=judge.read_reason(text)))
    Battle.objects.create(owner=run.owner, team=run.team, mode=Battle.Mode.SUITE,
                          left=generations[("answer", prompt, left)],
                          right=generations[("answer", prompt, right)], outcome=outcome, voted_at=timezone.now(),
                          tag=run.suite.tag, judge=run.judge,
                          judge_template_version=judge.template_version(run.judge_template), judgements=readings)


def cancel(run: SuiteRun) -> None:
    """Stop `run`: no new step starts anything, and its live generations are cancelled."""
    with transaction.atomic():
        run.state, run.finished_at = SuiteRun.State.CANCELLED, timezone.now()
        run.save(update_fields=["state", "finished_at"])
    _cancel_live(run)


def _cancel_live(run: SuiteRun) -> None:
    services.cancel(_live_generation_ids(run), "user")


def _live_generation_ids(run: SuiteRun) -> list:
    live = {"run": run, "generation__status__in": Generation.live_statuses()}
    return [*SuiteAnswer.objects.filter(**live).values_list("generation_id", flat=True),
            *SuiteJudgement.objects.filter(**live).values_list("generation_id", flat=True),
            *rubric.live_generation_ids(run)]


def kick() -> int:
    """A new chain of steps for each running run that stopped stepping (its Celery worker was
    killed, or Redis lost the queued step); how many. A periodic job (arena/scheduler.py), every
    KICK_EVERY_S, registered from SuiteRunsConfig.ready()."""
    cutoff = timezone.now() - timedelta(seconds=STALLED_AFTER_S)
    stalled = list(SuiteRun.objects.filter(state=SuiteRun.State.RUNNING, stepped_at__lt=cutoff))
    for run in stalled:
        log.info("Suite run %s has not stepped since %s: starting a new chain", run.id, run.stepped_at)
        with transaction.atomic():
            start_chain(run)
    return len(stalled)
