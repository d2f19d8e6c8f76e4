"""arena/workers: what the orchestrator records for people (DatabaseRecorder, one row per
worker) and how the status page sums it up, under the app label the models had in
orchestration/ so databases migrated before the move need nothing."""

import time

import pytest
from django.apps import apps
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from arena.workers.models import DatabaseRecorder, WorkerProcess
from arena.workers.status import cold_start_history, human_duration

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
    history = cold_start_history()
    assert {slug: (row["starts"], row["mean_s"], row["last_s"]) for slug, row in history.items()} == {
        "a": (2, 3.0, 4.0), "b": (1, 10.0, 10.0)}


# --- the status page: names and durations people read ------------------------------------------
@pytest.mark.parametrize(("seconds", "shown"), [
    (7.44, "7.4 s"), (52.4, "52 s"), (352, "5 min 52 s"), (360, "6 min"), (7500, "2 h 5 min"),
    (3 * 86400 + 4 * 3600 + 59, "3 d 4 h"), (None, "–"),
])
def test_durations_read_as_minutes_hours_and_days(seconds, shown):
    assert human_duration(seconds) == shown


def test_the_status_page_names_each_worker_and_says_how_long_in_minutes(smollm):
    """A worker ready 352 s before a fixed clock reads "5 min 52 s" under its catalogue name (not its slug)."""
    import json

    from django.contrib.auth import get_user_model
    from django.template.loader import render_to_string

    from arena import streams
    from arena.workers.status import page_context

    now = 1_800_000_000.0
    recorder = DatabaseRecorder()
    recorder.transition(f"{smollm.slug}-0001", smollm.slug, "starting", now - 400)
    recorder.transition(f"{smollm.slug}-0001", smollm.slug, "ready", now - 352, cold_start_s=48.0)
    client, keys = streams.client(), streams.keys()
    client.set(keys.orchestrator_status(), json.dumps({
        "at": now, "nodes": [], "workers": [{"worker_id": f"{smollm.slug}-0001", "slug": smollm.slug, "node": "local",
                                             "state": "ready", "reserved_mb": 500, "in_flight": 0,
                                             "ready_at": now - 352, "cold_start_s": 48.0}]}))
    try:
        staff = get_user_model().objects.create_user("staff", is_staff=True)
        html = render_to_string("workers/_status.html", page_context(staff, now=now))
    finally:
        client.delete(keys.orchestrator_status())
    assert f'<td title="{smollm.slug}">{smollm.name}</td>' in html  # the worker's row and its cold starts
    assert html.count(f">{smollm.name}</td>") == 2
    assert "<td data-uptime>5 min 52 s</td>" in html and "352 s" not in html
    assert "<td>48 s</td>" in html  # its cold start, and the mean of one
