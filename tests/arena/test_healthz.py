"""GET /healthz in the test process: database and Redis are real and up; no Celery
worker or orchestrator runs here, so the app reports that it cannot serve (503).
The live tests check the 200 with everything running.

Anyone gets the verdict per check; only signed-in staff get the details (which models
are loaded, counts, timings, errors). A staff user's own blind contestants stay hidden
even then: tests/arena/workers/test_secrecy.py."""

import time

import pytest

from arena.workers.models import DatabaseRecorder

pytestmark = pytest.mark.django_db


@pytest.fixture
def loaded(db):
    recorder = DatabaseRecorder()
    recorder.transition("finch-2b-0a1b2c3d", "finch-2b", "starting", time.time())
    recorder.transition("finch-2b-0a1b2c3d", "finch-2b", "ready", time.time(), cold_start_s=1.0)


def test_healthz_reports_each_part(client):
    response = client.get("/healthz")
    body = response.json()
    assert body["checks"]["database"]["ok"] and body["checks"]["redis"]["ok"]
    assert not body["checks"]["orchestrator"]["ok"]
    assert response.status_code == 503 and body["status"] == "unavailable"


def test_anyone_gets_only_ok_or_not_per_check(client, owner, loaded):
    for signed_in in (False, True):  # a user who is not staff: the same
        if signed_in:
            client.force_login(owner)
        response = client.get("/healthz")
        assert response.json() == {"status": "unavailable", "checks": {
            "database": {"ok": True}, "redis": {"ok": True}, "celery": {"ok": False},
            "orchestrator": {"ok": False}, "inference_workers": {"ok": True}}}
        assert "finch" not in response.content.decode()


def test_staff_get_the_details(admin_client, loaded):
    response = admin_client.get("/healthz")
    checks = response.json()["checks"]
    assert response.status_code == 503
    assert checks["inference_workers"]["workers"] == [
        {"worker_id": "finch-2b-0a1b2c3d", "model": "finch-2b", "state": "ready"}]
    assert "hidden" not in checks["inference_workers"]
    assert "orchestrator is not heartbeating" in checks["orchestrator"]["error"]
    assert all("ms" in check for check in checks.values())
