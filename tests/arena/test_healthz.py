"""GET /healthz in the test process: database and Redis are real and up; no Celery
worker or orchestrator runs here, so the app reports that it cannot serve (503).
The live tests check the 200 with everything running."""

import pytest

pytestmark = pytest.mark.django_db


def test_healthz_reports_each_part(client):
    response = client.get("/healthz")
    body = response.json()
    assert body["checks"]["database"]["ok"] and body["checks"]["redis"]["ok"]
    assert not body["checks"]["orchestrator"]["ok"]
    assert response.status_code == 503 and body["status"] == "unavailable"
