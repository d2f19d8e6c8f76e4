"""The app's periodic jobs: registered by the apps that own them, run by the orchestrator's loop.

An app registers each of its jobs once, from its AppConfig.ready(), with its period:
`scheduler.register("admit the line", every_s=1.0, run=admit_waiting)` (generations: the line's
admitter and the sweeper; history: the share-link view counts; suite runs: the kicker of stalled
runs). The orchestrator command calls `run_due()` on each tick of its loop; that runs every job
whose period has passed since it last ran. This module imports no app: the apps come to it.

Why this and not Celery beat: one process of the app always runs, once, already: the
orchestrator. Its loop ticks every 0.2 s, and these jobs run every 1 to 10 s, too often for a
beat schedule sent through the broker to be worth it; beat would also be one more process to
start (and keep single) in `make run` and every deployment.

A job that raises is logged and tried again at its next period; the other jobs run regardless.
Before each job, the database connections the database has closed are dropped (a long-lived
process: the jobs read and write the database).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.db import close_old_connections

log = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass
class Job:
    name: str
    every_s: float | Callable[[], float]  # a callable is read at each check (a setting may change)
    run: Callable[[], object]
    last: float = float("-inf")  # the clock's time at its last start

    def period_s(self) -> float:
        return self.every_s() if callable(self.every_s) else self.every_s

    def due(self, now: float) -> bool:
        return now - self.last >= self.period_s()


class Scheduler:
    """Jobs by name; `run_due` runs the ones whose period has passed."""

    def __init__(self, before_each: Callable[[], None] = close_old_connections) -> None:
        self.jobs: dict[str, Job] = {}
        self.before_each = before_each

    def register(self, name: str, every_s: float | Callable[[], float], run: Callable[[], object]) -> None:
        """Adds the job `name` (registered again, it replaces the one before: ready() may run twice)."""
        self.jobs[name] = Job(name, every_s, run)

    def run_due(self, clock: Clock = time.monotonic) -> list[str]:
        """Runs each due job, in the order registered; the names of those that ran (failed included)."""
        ran = []
        for job in list(self.jobs.values()):
            now = clock()
            if not job.due(now):
                continue
            job.last = now
            ran.append(job.name)
            self.before_each()
            try:
                job.run()
            except Exception:  # one job's failure must not stop the others, nor the orchestrator's loop
                log.exception("Periodic job %r failed; it runs again in %.1f s", job.name, job.period_s())
        return ran


# The process's scheduler: the apps register with it, the orchestrator runs it.
default = Scheduler()
register = default.register
run_due = default.run_due
