"""Every write that starts or changes a suite run, shared by the page and the API: start a run,
record a person's blind verdict on one of its pairs, reveal the names behind a person's verdicts,
check a run's answers again against its suite's current checks (`start_recheck`; the runner's steps
check each answer as it lands: arena/suite_runs/checking.py). (The run's steps are the runner's:
arena/suite_runs/runner.py.)"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from arena.battles import fair
from arena.battles.judging import MAX_JUDGES
from arena.battles.models import Battle
from arena.battles.voting import Note
from arena.catalogue.models import ModelEntry
from arena.generations import limits
from arena.generations.models import Generation
from arena.leaderboard.cache import bump_now_and_on_commit
from arena.suites.models import Suite
from arena.teams import membership
from inference.protocol import ParamError

from . import checking, judge, rubric, runner, tasks
from .models import RaterVerdict, SuiteAnswer, SuiteContestant, SuiteRun, SuiteRunJudge, VerdictError

MAX_BUDGET = 1_000_000


class RunError(Exception):
    """A run that cannot start; the message is fit for the user, `field` names what is wrong
    (as the API's request calls it: budget, contestants, format, judge, judges, judge_template, params, suite)."""

    def __init__(self, message: str, field: str = ""):
        super().__init__(message)
        self.field = field


@transaction.atomic
def start_run(owner, *, suite: Suite, contestants: list[ModelEntry], format: str = SuiteRun.Format.ROUND_ROBIN,
              judge_model: ModelEntry | None = None, judge_template: str = "", params: dict | None = None,
              budget: int | None = None, judges: list[ModelEntry] | None = None,
              reuse_answers: bool = False) -> SuiteRun:
    """A run of `contestants` (in seed order) over `suite`, its first step queued; `budget`: an
    adaptive run's judge calls at most (None: half a round robin's). Its judge: `judge_model`,
    or a jury of up to MAX_JUDGES, `judges` (the first is the run's judge), whose majority decides.
    `reuse_answers`: identical deterministic requests take the answers of the owner's earlier runs
    (arena/generations/cache.py; within the run they always do). Off unless asked: a re-run also
    measures speeds, and an engine upgraded under an unchanged entry would answer anew."""
    params = fair.with_limit(params)  # one token limit on every answer of the run, stored and said on its page
    suite = Suite.objects.select_for_update().get(id=suite.id)  # its version now: an import waits for the start
    jury = list(judges) if judges else ([judge_model] if judge_model else [])
    _check_jury(jury, judge_model)
    judge_model = jury[0] if jury else None
    judge_template = judge_template or (judge.DEFAULT_TEMPLATE if judge_model else "")
    _check(suite, contestants, format, judge_model, judge_template, params)
    for other in jury[1:]:
        _check(suite, contestants, format, other, judge_template, params)
    _check_format(format, len(contestants), judge_model, budget, len(jury))
    if problem := rubric.start_problem(suite, jury):
        raise RunError(problem, "judge")
    limits.check_start(owner, cost=0)  # the rate of requests; its generations keep to the run's window
    run = SuiteRun.objects.create(owner=owner, team=membership.current_team(owner), suite=suite, format=format,
                                  judge=judge_model,
                                  judge_template=judge_template, params=params, seed=secrets.randbelow(2**31),
                                  budget=budget, reuse_answers=reuse_answers, suite_version=suite.version)
    SuiteContestant.objects.bulk_create([SuiteContestant(run=run, model=m, position=i)
                                         for i, m in enumerate(contestants, start=1)])
    SuiteRunJudge.objects.bulk_create([SuiteRunJudge(run=run, model=m, position=i)
                                       for i, m in enumerate(jury[1:], start=2)])
    runner.start_chain(run)
    return run


def _check(suite: Suite, contestants: list[ModelEntry], format: str, judge_model, judge_template: str,
           params: dict) -> None:
    if not SuiteRun.MIN_CONTESTANTS <= len(contestants) <= SuiteRun.MAX_CONTESTANTS:
        raise RunError(f"Pick {SuiteRun.MIN_CONTESTANTS} to {SuiteRun.MAX_CONTESTANTS} contestants, "
                       f"not {len(contestants)}.", "contestants")
    if len({m.id for m in contestants}) != len(contestants):
        raise RunError("Each contestant may appear only once.", "contestants")
    if format not in SuiteRun.Format.values:
        raise RunError("The format is round_robin, knockout, adaptive or swiss.", "format")
    if any(not m.enabled for m in contestants):
        raise RunError("Every contestant must be an enabled catalogue model.", "contestants")
    if judge_model is not None and not judge_model.enabled:
        raise RunError("The judge must be an enabled catalogue model.", "judge")
    if judge_template and (problem := judge.template_problem(judge_template)):  # a judge's, or any given
        raise RunError(problem, "judge_template")
    if not suite.ordered_prompts().exists():
        raise RunError("The suite has no prompts.", "suite")
    constraints = [prompt.constraint_params for prompt in suite.ordered_prompts() if prompt.constraint]
    _check_params(contestants, [{}], params, "params")  # the run's parameters...
    _check_params(contestants, constraints, params, "contestants")  # ...and each prompt's constraint under them
    if judge_model is not None:
        _check_params([judge_model], [{}], judge.JUDGE_PARAMS, "judge")


def _check_jury(jury: list[ModelEntry], judge_model: ModelEntry | None) -> None:
    if len(jury) > MAX_JUDGES:
        raise RunError(f"Name at most {MAX_JUDGES} judges, not {len(jury)}.", "judges")
    if len({m.id for m in jury}) != len(jury):
        raise RunError("Each judge may sit only once.", "judges")
    if judge_model is not None and jury and jury[0] != judge_model:
        raise RunError("Name the judge or the judges, not both.", "judges")


def _check_format(format: str, contestants: int, judge_model, budget: int | None, judges: int = 1) -> None:
    """Adaptive and Swiss choose their pairs from a model judge's verdicts; Swiss needs 8 or more
    contestants; only adaptive takes a budget, of at least one pair's calls (two a judge)."""
    if contestants == 1 and judge_model is not None:
        raise RunError("A judge compares two answers: a run of one contestant only checks its answers "
                       "(leave the judge empty, or pick a second contestant).", "judge")
    chooses = format in (SuiteRun.Format.ADAPTIVE, SuiteRun.Format.SWISS)
    if chooses and judge_model is None:
        raise RunError(f"The {format} format chooses its pairs from a model judge's verdicts: name a judge.", "judge")
    if format == SuiteRun.Format.SWISS and contestants < SuiteRun.MIN_SWISS:
        raise RunError(f"A Swiss run needs {SuiteRun.MIN_SWISS} or more contestants, not {contestants}: with fewer, "
                       "use a round robin (or adaptive).", "format")
    if budget is not None and format != SuiteRun.Format.ADAPTIVE:
        raise RunError("Only an adaptive run takes a budget.", "budget")
    least = 2 * max(1, judges)
    if budget is not None and not least <= budget <= MAX_BUDGET:
        raise RunError(f"The budget is {least} to {MAX_BUDGET} judge calls (each pair is read twice by each "
                       "judge).", "budget")


def _check_params(models: list[ModelEntry], constraints: list[dict], params: dict, field: str) -> None:
    try:
        for model in models:
            for constraint in constraints:
                model.params_with_defaults({**params, **constraint}, shared=True)
    except ParamError as exc:
        raise RunError(str(exc), field) from exc


@transaction.atomic
def record_human_verdict(run: SuiteRun, user, left_id, right_id, outcome: str, note: Note | None = None,
                         rater=None, now=None) -> Battle:
    """`user`'s blind verdict on the pair of answers (`left_id`, `right_id`, in the pair's own
    left/right terms) as a suite battle, with its note (reasons and comment, checked by
    battles.voting.clean_note); VerdictError if it is not a pair of this run ready to judge, or
    `user` already judged it. `rater`: a rater link of this run (arena.raters) gave it: the
    battle is the run owner's, attributed to the link (RaterVerdict), and "already judged" is
    the link's (the link's own limits are arena.raters.actions' to check)."""
    wanted = (str(left_id), str(right_id))
    pair = next((p for p in run.people_pairs() if (str(p.left.id), str(p.right.id)) == wanted), None)
    if pair is None:
        raise VerdictError("That is not a pair of this run ready to judge.")
    if outcome not in Battle.Outcome.values:
        raise VerdictError("Choose A, B, a tie or both bad.")
    # Serialise one user's votes on this run, so a double submit cannot store the pair twice.
    SuiteRun.objects.select_for_update().filter(id=run.id).first()
    if rater is not None:
        if rater.run_id != run.id:
            raise VerdictError("That is not a pair of this run ready to judge.")
        user = run.owner
        if RaterVerdict.objects.filter(rater=rater, battle__left_id=pair.left.id,
                                       battle__right_id=pair.right.id).exists():
            raise VerdictError("You have already judged this pair.")
    elif run.people_verdicts(user).filter(left_id=pair.left.id, right_id=pair.right.id).exists():
        raise VerdictError("You have already judged this pair.")
    elif run.revealed_to(user):
        raise VerdictError("The names were revealed to you: your judging of this run is over.")
    note = note or Note()
    now = now or timezone.now()
    battle = Battle.objects.create(owner=user, team=run.team, mode=Battle.Mode.SUITE, blind=True, left=pair.left,
                                   right=pair.right, outcome=outcome, voted_at=now, tag=run.suite.tag,
                                   comment=note.comment, reasons=list(note.reasons))
    if rater is not None:
        RaterVerdict.objects.create(battle=battle, run=run, rater=rater, rater_name=rater.name, created_at=now)
    return battle


def reveal_for(run: SuiteRun, user) -> int:
    """Show `user` the names behind their blind verdicts on this run; how many were hidden."""
    revealed = run.people_verdicts(user).filter(revealed=False).update(revealed=True)
    if revealed:
        bump_now_and_on_commit()  # the revealed verdicts now count on the leaderboard
    return revealed


@dataclass(frozen=True)
class Rechecked:
    """A re-check started: `checked` answers checked at once, `pending` left to the background."""

    checked: int
    pending: int


RECHECK_BUDGET_S = 10.0  # what the page's button and the API spend checking before they answer


@transaction.atomic
def start_recheck(run: SuiteRun, budget_s: float | None = None) -> Rechecked:
    """Check every finished answer of `run` again against its suite's current checks (the
    re-check button, POST /api/v1/suite-runs/<id>/recheck), generating nothing: each loses its old
    results (it reads "not checked" until checked again), as many as `budget_s` (default
    RECHECK_BUDGET_S) allows are checked now, and a background task checks the rest
    (arena.suite_runs.tasks). A running run's steps check them too, and it ends only once every
    one is checked."""
    done = SuiteAnswer.objects.filter(run=run, generation__status=Generation.Status.DONE)
    total = done.update(checks=[], passed=None, score=None, checked_at=None)
    pending = checking.check_answers(run, budget_s=RECHECK_BUDGET_S if budget_s is None else budget_s)
    rubric.step(run, 0, None)  # rubric checks take their stored grades: nothing is generated
    if pending:
        tasks.finish_recheck.delay_on_commit(str(run.id))
    return Rechecked(total - pending, pending)
