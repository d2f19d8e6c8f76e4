"""arena/workers: what the orchestrator records for people (DatabaseRecorder, one row per
worker) and how the status page sums it up, under the app label the models had in
orchestration/ so databases migrated before the move need nothing."""

import time

import pytest
from django.apps import apps
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from arena.workers.models import DatabaseRecorder, WorkerProcess
from arena.workers.status import cold_start_history

pytestmark = pytest.mark.django_db


def test_the_workers_app_keeps_the_orchestration_label_table_and_migration_history():
    assert apps.get_app_config("orchestration").name == "arena.workers"
    assert WorkerProcess._meta.db_table == "orchestration_workerprocess"
    assert "orchestration_workerprocess" in connection.introspection.table_names()
    applied = {name for app, name in MigrationRecorder(connection).applied_migrations() if app == "orchestration"}
    assert applied == {"0001_initial"}


def test_the_recorder_keeps_a_workers_life_in_one_row():
    recorder, t0 = DatabaseRecorder(), time.time()
    recorder.transition("tiny-1", "tiny", "starting", t0, pid=4242, node="gpu1")
    recorder.transition("tiny-1", "tiny", "ready", t0 + 3.5, cold_start_s=3.5)
    recorder.transition("tiny-1", "tiny", "stopping", t0 + 60, reason="idle for 600 s")
    recorder.transition("tiny-1", "tiny", "stopped", t0 + 61)
    row = WorkerProcess.objects.get(worker_id="tiny-1")
    assert (row.slug, row.node, row.pid, row.state, row.cold_start_s) == ("tiny", "gpu1", 4242, "stopped", 3.5)
    assert row.reason == "idle for 600 s"  # a later transition without a reason keeps it
    assert row.ready_at.timestamp() == pytest.approx(t0 + 3.5)
    assert row.ended_at.timestamp() == pytest.approx(t0 + 61)
    assert [(t["state"], t["reason"]) for t in row.transitions] == [
        ("starting", ""), ("ready", ""), ("stopping", "idle for 600 s"), ("stopped", "")]


def test_a_failed_worker_ends_with_its_reason():
    recorder = DatabaseRecorder()
    recorder.transition("big-1", "big", "starting", 100.0)
    recorder.transition("big-1", "big", "failed", 130.0, reason="The model worker was killed by signal 9.")
    row = WorkerProcess.objects.get(worker_id="big-1")
    assert (row.state, row.reason, row.ready_at) == ("failed", "The model worker was killed by signal 9.", None)
    assert row.ended_at.timestamp() == 130.0


def test_cold_start_history_counts_the_starts_that_became_ready_per_model():
    recorder = DatabaseRecorder()
    for worker_id, slug, cold in (("a-1", "a", 2.0), ("a-2", "a", 4.0), ("b-1", "b", 10.0)):
        recorder.transition(worker_id, slug, "starting", 0.0)
        recorder.transition(worker_id, slug, "ready", cold, cold_start_s=cold)
    recorder.transition("b-2", "b", "starting", 0.0)
    recorder.transition("b-2", "b", "failed", 5.0, reason="load error")  # never ready: no cold start
    assert cold_start_history() == {"a": {"starts": 2, "mean_s": 3.0}, "b": {"starts": 1, "mean_s": 10.0}}
