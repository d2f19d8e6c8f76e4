"""Starting a suite run, shared by the page and the API."""

from __future__ import annotations

import secrets

from django.db import transaction

from arena.catalogue.models import ModelEntry
from inference.protocol import ParamError

from . import judge, runner
from .models import Suite, SuiteContestant, SuiteRun


class RunError(Exception):
    """A run that cannot start; the message is fit for the user."""


@transaction.atomic
def start_run(owner, *, suite: Suite, contestants: list[ModelEntry], format: str = SuiteRun.Format.ROUND_ROBIN,
              judge_model: ModelEntry | None = None, judge_template: str = "", params: dict | None = None) -> SuiteRun:
    """A run of `contestants` (in seed order) over `suite`, its first step queued."""
    params = dict(params or {})
    judge_template = judge_template or (judge.DEFAULT_TEMPLATE if judge_model else "")
    _check(suite, contestants, format, judge_model, judge_template, params)
    run = SuiteRun.objects.create(owner=owner, suite=suite, format=format, judge=judge_model,
                                  judge_template=judge_template, params=params, seed=secrets.randbelow(2**31))
    SuiteContestant.objects.bulk_create([SuiteContestant(run=run, model=m, position=i)
                                         for i, m in enumerate(contestants, start=1)])
    runner.start_chain(run)
    return run


def _check(suite: Suite, contestants: list[ModelEntry], format: str, judge_model, judge_template: str,
           params: dict) -> None:
    if not SuiteRun.MIN_CONTESTANTS <= len(contestants) <= SuiteRun.MAX_CONTESTANTS:
        raise RunError(f"Pick {SuiteRun.MIN_CONTESTANTS} to {SuiteRun.MAX_CONTESTANTS} contestants, "
                       f"not {len(contestants)}.")
    if len({m.id for m in contestants}) != len(contestants):
        raise RunError("Each contestant may appear only once.")
    if format not in SuiteRun.Format.values:
        raise RunError("The format is round_robin or knockout.")
    if any(not m.enabled for m in [*contestants, *([judge_model] if judge_model else [])]):
        raise RunError("Every contestant and the judge must be enabled catalogue models.")
    if judge_model is not None and (problem := judge.template_problem(judge_template)):
        raise RunError(problem)
    if not suite.prompts.exists():
        raise RunError("The suite has no prompts.")
    constraints = [prompt.constraint_params for prompt in suite.prompts.all() if prompt.constraint]
    try:
        for model in contestants:
            for constraint in [{}, *constraints]:  # the run's parameters, and each prompt's constraint under them
                model.params_with_defaults({**params, **constraint})
        if judge_model is not None:
            judge_model.params_with_defaults(judge.JUDGE_PARAMS)
    except ParamError as exc:
        raise RunError(str(exc)) from exc
