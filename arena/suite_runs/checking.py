"""Checking a suite run's answers (arena.suites.checks): the runner's step checks each answer as
it lands (`check_answers`), the action `start_recheck` (arena.suite_runs.actions) every done one again.
Each answer gets its suite's default checks, then its prompt's own; the results, the verdict and
the weighted score are stored on the answer (SuiteAnswer.checks, passed, score, checked_at). A
rubric check is stored pending, and the answer's verdict and score stay null until its judge's
grade lands (arena/suite_runs/rubric.py stores it and the verdict)."""

from __future__ import annotations

import time

from django.utils import timezone

from arena.generations.models import Generation
from arena.suites import checks
from arena.suites.models import Suite, SuitePrompt

from .models import SuiteAnswer, SuiteRun

CHECK_BATCH = 200  # answers read and written at a time


def answer_input(answer: SuiteAnswer) -> checks.Answer:
    """What the checks read of an answer: its text, the prompt's reference and its measures."""
    gen = answer.generation
    return checks.Answer(text=gen.text, reference=answer.prompt.reference, metrics={
        "ttft_s": gen.time_to_first_token_s, "tokens_per_s": gen.tokens_per_s,
        "generated_tokens": gen.generated_tokens, "total_time_s": total_time(gen.metrics or {})})


def total_time(metrics: dict) -> float | None:
    """Seconds from when the worker began the answer to its end (as time to first token counts:
    neither the wait in line nor a model's load), from the generation's request metrics."""
    began = metrics.get("first_scheduled_time") or metrics.get("arrival_time")
    finished = metrics.get("finished_time")
    return max(0.0, finished - began) if began and finished else None


class _Checks:
    """A suite's checks per prompt (its defaults, then the prompt's own), each parsed once."""

    def __init__(self, suite: Suite):
        self.suite = suite
        self.by_prompt: dict[int, list[checks.Check] | str] = {}

    def of(self, prompt: SuitePrompt) -> list[checks.Check] | str:
        """The prompt's checks, or why they cannot be read (a spec stored before a rule changed)."""
        if prompt.id not in self.by_prompt:
            try:
                self.by_prompt[prompt.id] = checks.parse_all([*self.suite.default_checks, *prompt.checks])
            except checks.CheckError as exc:
                self.by_prompt[prompt.id] = str(exc)
        return self.by_prompt[prompt.id]


def _check_one(answer: SuiteAnswer, found: list[checks.Check] | str) -> None:
    if isinstance(found, str):
        results = [checks.Result("checks", "", False, 0.0, 1.0, "readable checks", "not evaluated", found)]
    else:
        results = checks.evaluate(found, answer_input(answer))
    verdict = checks.verdict(results)
    answer.checks = [r.as_json() for r in results]
    # No check on this prompt: nothing to pass or fail (it counts in no pass rate).
    answer.passed, answer.score = (verdict.passed, verdict.score) if results else (None, None)
    answer.checked_at = timezone.now()


def _check(run: SuiteRun, answers, budget_s: float | None) -> int:
    """Check `answers` (done, of `run`), storing each result; stop once `budget_s` is spent.
    How many were left unchecked. The budget is looked at after every answer, not every batch:
    a suite whose regex runs out of time on each answer spends about 0.4 s an answer, and a
    batch of 200 such answers would outlast a step's Celery time limit, so no step would ever
    store one and the run would never end."""
    started, suite_checks = time.monotonic(), _Checks(run.suite)
    rows = list(answers.select_related("generation", "prompt").order_by("id"))
    for start in range(0, len(rows), CHECK_BATCH):
        batch = rows[start:start + CHECK_BATCH]
        for n, answer in enumerate(batch):
            if budget_s is not None and time.monotonic() - started > budget_s:
                SuiteAnswer.objects.bulk_update(batch[:n], ["checks", "passed", "score", "checked_at"])
                return len(rows) - start - n
            _check_one(answer, suite_checks.of(answer.prompt))
        SuiteAnswer.objects.bulk_update(batch, ["checks", "passed", "score", "checked_at"])
    return 0


def check_answers(run: SuiteRun, budget_s: float | None = None) -> int:
    """Check the run's answers that are done and not checked yet (the runner's step, as they
    land); how many it left for the next step (`budget_s` spent: a step keeps its time limit
    even when a suite's regexes run out of time on every answer)."""
    pending = SuiteAnswer.objects.filter(run=run, checked_at__isnull=True, generation__status=Generation.Status.DONE)
    return _check(run, pending, budget_s)
