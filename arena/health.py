"""GET /healthz: can the application serve? JSON on each part it depends on.

Anyone may ask (a load balancer does, without logging in), so anyone gets only the verdict:
the status and {"ok": bool} per check. Which models are loaded or starting, counts, timings
and error texts are for staff signed in to the site: polled during a blind tournament, the
worker list would show which pair starts (and pre-warming, which pair comes next). Even a
staff user does not see their own unrevealed blind tournament's contestants one by one
(arena/battles/secrecy.py): those workers are only counted under "hidden".

The checks are computed at most once per ARENA_HEALTH_CACHE_S (5 s) per process (`_checks`):
a flood of requests cannot make the app ping Celery, which waits up to a second, once each.
"""

import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from arena import streams
from arena.battles.secrecy import HIDDEN_LABEL, secret_slugs
from arena.celery import app as celery_app
from arena.workers.models import WorkerProcess


def _check(fn: Callable[[], dict[str, Any] | None]) -> dict[str, Any]:
    started = time.perf_counter()
    result: dict[str, Any]
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


def _inference_workers(viewer, live: list[tuple[str, str, str]]) -> dict:
    hide = secret_slugs(viewer)
    detail: dict = {"workers": [{"worker_id": worker_id, "model": slug, "state": state}
                                for worker_id, slug, state in live if slug not in hide]}
    hidden = sum(slug in hide for _w, slug, _s in live)
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


def _cache_s() -> float:
    return settings.ARENA_HEALTH_CACHE_S


_cached: tuple[float, dict, list] | None = None  # (when, checks, live workers as (id, slug, state))
_lock = threading.Lock()


def _live_workers() -> list[tuple[str, str, str]]:
    return list(WorkerProcess.objects.filter(state__in=["starting", "ready", "stopping"])
                .values_list("worker_id", "slug", "state"))


def _checks() -> tuple[dict, list]:
    """The checks, computed at most once per ARENA_HEALTH_CACHE_S (5 s; a failing answer at most
    once a second) in this process: a flood of requests pings Celery (which waits up to a second)
    once per period, not once each."""
    global _cached
    with _lock:  # requests arriving while one computes wait for its answer
        if _cached is not None:
            ok = all(check["ok"] for check in _cached[1].values())
            # a failing answer is kept at most a second, so a recovery shows at once
            if time.monotonic() - _cached[0] < (_cache_s() if ok else min(_cache_s(), 1.0)):
                return _cached[1], _cached[2]
        workers: list = []

        def inference_workers():
            workers.extend(_live_workers())

        checks = {
            "database": _check(_database),
            "redis": _check(_redis),
            "celery": _check(_celery),
            "orchestrator": _check(_orchestrator),
            "inference_workers": _check(inference_workers),
        }
        _cached = (time.monotonic(), checks, workers)
        return checks, workers


def reset_cache() -> None:
    global _cached
    with _lock:
        _cached = None


@never_cache
@require_GET
def healthz(request):
    staff = _staff(request)
    checks, workers = _checks()
    ok = all(check["ok"] for check in checks.values())
    if staff is None:  # the verdict only: no model, count, timing or error text
        checks = {name: {"ok": check["ok"]} for name, check in checks.items()}
    else:  # the workers' list as this viewer may see it
        try:
            detail = _inference_workers(staff, workers)
        except Exception:  # the database went away since: the checks say so
            detail = {}
        checks = {**checks, "inference_workers": {**checks["inference_workers"], **detail}}
    return JsonResponse({"status": "ok" if ok else "unavailable", "checks": checks}, status=200 if ok else 503)
