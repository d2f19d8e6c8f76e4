"""The rest of a re-check, in the background (arena.suite_runs.actions.start_recheck): a page or
API request checks what its budget allows and leaves the other answers to `finish_recheck`, which
checks for RECHECK_STEP_S at a time and queues itself again until none is left. A suite whose
regex runs out of time on every answer (about 0.4 s an answer) thus never holds a request or a
Celery task past its time limit. (Celery finds this module by its name.)"""

from __future__ import annotations

from celery import shared_task

from . import checking, rubric
from .models import SuiteRun

RECHECK_STEP_S = 20.0  # well inside the task's soft time limit, with a regex's overrun to spare


@shared_task(ignore_result=True, soft_time_limit=60, time_limit=90)
def finish_recheck(run_id: str) -> None:
    run = SuiteRun.objects.select_related("suite").filter(id=run_id).first()
    if run is None:
        return  # deleted meanwhile
    pending = checking.check_answers(run, budget_s=RECHECK_STEP_S)
    rubric.step(run, 0, None)  # rubric checks take their stored grades
    if pending:
        finish_recheck.delay(run_id)
