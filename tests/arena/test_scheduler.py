"""The periodic jobs (arena/scheduler.py): each runs at most once per its period, by an injected
clock; one job's exception is logged and stops neither the others nor the next run; the apps
register theirs from their AppConfig.ready()."""

import logging

from django.db import close_old_connections

from arena import scheduler
from arena.generations import admission
from arena.history import view_counts
from arena.suite_runs import runner


class Clock:
    def __init__(self, now: float = 1_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def jobs_alone() -> scheduler.Scheduler:
    """A scheduler of the test's own, touching no database (the app's drops closed connections first)."""
    return scheduler.Scheduler(before_each=lambda: None)


def test_a_job_runs_once_per_its_period():
    jobs, clock, calls = jobs_alone(), Clock(), []
    jobs.register("fast", every_s=1.0, run=lambda: calls.append("fast"))
    jobs.register("slow", every_s=2.5, run=lambda: calls.append("slow"))
    ran = []
    for _ in range(6):  # 1000.0, 1000.5, ..., 1002.5
        ran.append(jobs.run_due(clock))
        clock.now += 0.5
    assert ran == [["fast", "slow"], [], ["fast"], [], ["fast"], ["slow"]]
    assert calls == ["fast", "slow", "fast", "fast", "slow"]


def test_a_period_given_as_a_callable_is_read_at_each_check():
    jobs, clock, period = jobs_alone(), Clock(), [10.0]
    jobs.register("flush", every_s=lambda: period[0], run=lambda: None)
    assert jobs.run_due(clock) == ["flush"]
    clock.now += 5
    assert jobs.run_due(clock) == []
    period[0] = 5.0
    assert jobs.run_due(clock) == ["flush"]


def test_a_failing_job_is_logged_and_stops_neither_the_others_nor_its_next_run(caplog):
    jobs, clock, calls = jobs_alone(), Clock(), []

    def broken():
        calls.append("broken")
        raise RuntimeError("database gone")

    jobs.register("broken", every_s=1.0, run=broken)
    jobs.register("after", every_s=1.0, run=lambda: calls.append("after"))
    with caplog.at_level(logging.ERROR, logger="arena.scheduler"):
        assert jobs.run_due(clock) == ["broken", "after"]
    assert calls == ["broken", "after"]
    assert [r.exc_info[1].args for r in caplog.records] == [("database gone",)]
    clock.now += 1.0
    assert jobs.run_due(clock) == ["broken", "after"]


def test_registering_a_name_again_replaces_the_job():
    jobs, calls = jobs_alone(), []
    jobs.register("job", every_s=1.0, run=lambda: calls.append(1))
    jobs.register("job", every_s=1.0, run=lambda: calls.append(2))
    jobs.run_due(Clock())
    assert calls == [2]


def test_the_apps_register_their_jobs_with_their_periods():
    jobs = scheduler.default.jobs
    assert set(jobs) == {"admit the line", "sweep generations", "kick stalled suite runs", "share-link views",
                         "settle category classifications"}
    assert jobs["admit the line"].run is admission.admit_waiting
    assert jobs["admit the line"].period_s() == admission.ADMIT_EVERY_S == 1.0
    assert jobs["sweep generations"].period_s() == 2.0
    assert jobs["kick stalled suite runs"].run is runner.kick
    assert jobs["share-link views"].run is view_counts.flush
    assert scheduler.default.before_each is close_old_connections  # a long-lived process: as each job did
