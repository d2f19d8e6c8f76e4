"""GET /healthz: can the application serve? JSON on each part it depends on."""

import time

from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from arena import streams
from arena.celery import app as celery_app
from arena.workers.models import WorkerProcess


def _check(fn) -> dict:
    started = time.perf_counter()
    try:
        detail = fn()
        result = {"ok": True}
        if detail is not None:
            result.update(detail)
    except Exception as exc:  # any failure is the answer, not a 500
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    result["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return result


def _database():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _redis():
    streams.client().ping()


def _celery():
    replies = celery_app.control.ping(timeout=1.0)
    if not replies:
        raise RuntimeError("no Celery worker answered")
    return {"workers": len(replies)}


def _orchestrator():
    if not streams.client().exists(streams.keys().orchestrator_heartbeat()):
        raise RuntimeError("the orchestrator is not heartbeating")


def _inference_workers():
    live = WorkerProcess.objects.filter(state__in=["starting", "ready", "stopping"])
    return {"workers": [{"worker_id": w.worker_id, "model": w.slug, "state": w.state} for w in live]}


@never_cache
@require_GET
def healthz(request):
    checks = {
        "database": _check(_database),
        "redis": _check(_redis),
        "celery": _check(_celery),
        "orchestrator": _check(_orchestrator),
        "inference_workers": _check(_inference_workers),
    }
    ok = all(check["ok"] for check in checks.values())
    return JsonResponse({"status": "ok" if ok else "unavailable", "checks": checks}, status=200 if ok else 503)
