"""GET /healthz: can the application serve? JSON on each part it depends on.

Anyone may ask (a load balancer does, without logging in), so anyone gets only the verdict:
the status and {"ok": bool} per check. Which models are loaded or starting, counts, timings
and error texts are for staff signed in to the site: polled during a blind tournament, the
worker list would show which pair starts (and pre-warming, which pair comes next). Even a
staff user does not see their own unrevealed blind tournament's contestants one by one
(arena/tournaments/secrecy.py): those workers are only counted under "hidden".
"""

import time

from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from arena import streams
from arena.celery import app as celery_app
from arena.tournaments.secrecy import HIDDEN_LABEL, secret_slugs
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


def _inference_workers(viewer):
    live = list(WorkerProcess.objects.filter(state__in=["starting", "ready", "stopping"]))
    hide = secret_slugs(viewer)
    detail = {"workers": [{"worker_id": w.worker_id, "model": w.slug, "state": w.state}
                          for w in live if w.slug not in hide]}
    hidden = sum(w.slug in hide for w in live)
    if hidden:
        detail["hidden"] = {"label": HIDDEN_LABEL, "workers": hidden}
    return detail


def _staff(request):
    """The signed-in staff user, else None; None too when the session cannot be read (the
    database is down: that is this page's answer to give, not a 500)."""
    try:
        user = request.user
        return user if user.is_authenticated and user.is_staff else None
    except Exception:
        return None


@never_cache
@require_GET
def healthz(request):
    staff = _staff(request)
    checks = {
        "database": _check(_database),
        "redis": _check(_redis),
        "celery": _check(_celery),
        "orchestrator": _check(_orchestrator),
        "inference_workers": _check(lambda: _inference_workers(staff)),
    }
    ok = all(check["ok"] for check in checks.values())
    if staff is None:  # the verdict only: no model, count, timing or error text
        checks = {name: {"ok": check["ok"]} for name, check in checks.items()}
    return JsonResponse({"status": "ok" if ok else "unavailable", "checks": checks}, status=200 if ok else 503)
