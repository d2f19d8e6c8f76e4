"""What the orchestrator is doing, for people: the staff status page and GET /api/v1/workers.

The orchestrator rewrites a snapshot in Redis every tick (`Keys.orchestrator_status`);
this module reads it and adds what only the database remembers (cold-start history).
"""

from __future__ import annotations

import json
import time

from django.db.models import Avg, Count

from .models import WorkerProcess

STALE_AFTER_S = 5.0  # an older snapshot means the orchestrator is not running


def snapshot(client, keys) -> dict:
    """{"running", "at", "nodes": [...], "workers": [...], "cold_starts": {slug: {...}}}."""
    raw = client.get(keys.orchestrator_status())
    status = json.loads(raw) if raw else {"at": None, "nodes": [], "workers": []}
    status["running"] = bool(status["at"]) and time.time() - status["at"] < STALE_AFTER_S
    now = time.time()
    for worker in status["workers"]:
        ready_at = worker.get("ready_at")
        worker["uptime_s"] = round(now - ready_at, 1) if ready_at else None
    for node in status["nodes"]:
        budget = node.get("budget_mb")
        node["used_pct"] = min(100, round(100 * node["reserved_mb"] / budget)) if budget else None
    status["cold_starts"] = cold_start_history()
    return status


def cold_start_history() -> dict[str, dict]:
    """Per variant: how many workers became ready and their mean cold start, in seconds."""
    rows = (
        WorkerProcess.objects.filter(cold_start_s__isnull=False)
        .values("slug")
        .annotate(starts=Count("id"), mean_s=Avg("cold_start_s"))
    )
    return {row["slug"]: {"starts": row["starts"], "mean_s": round(row["mean_s"], 1)} for row in rows}
