"""What the orchestrator is doing, for people: the staff status page and GET /api/v1/workers.

The orchestrator rewrites a snapshot in Redis every tick (`Keys.orchestrator_status`);
this module reads it and adds what only the database remembers (cold-start history).

Each node is shown as the backend reports it (Ray: its address, whether it is alive and
why Ray says it died, its resources and their use; the local backend: "local" and its
budget). A snapshot written before nodes carried these (an older orchestrator) still reads:
it listed live nodes only, so such a node is alive, and what it lacks is None ("–" on the page).

`hide` is the viewer's secret models (arena/battles/secrecy.py: the contestants of their
own unrevealed blind tournaments). Their workers are taken out of every list (workers,
cold starts, recent failures, preparations) and summed up in one `hidden` aggregate without
a slug, a worker id, a state, a time or a memory figure. Such a viewer gets no node use
either (a node's reserved memory, or what Ray says is in use, less the shown workers' would
be the hidden ones' size), nor its spare workers (kept only while the node is quiet): only the
budgets, the nodes' totals and whether they are alive.
"""

from __future__ import annotations

import json
import time

from django.db.models import Avg, Count, F, OuterRef, Subquery

from arena import streams
from arena.battles.secrecy import HIDDEN_LABEL, redact, secret_slugs
from arena.catalogue import preparation
from arena.catalogue.models import ModelEntry

from .models import WorkerProcess

STALE_AFTER_S = 5.0  # an older snapshot means the orchestrator is not running
# Only totals: never which worker holds them (contract: the orchestrator's status snapshot).
NODE_FIELDS = ("node", "name", "alive", "reason", "budget_mb", "reserved_mb", "resources", "in_use", "spares")
RESOURCE_FIELDS = ("cpus", "gpus", "memory_mb")
FAILURES_SHOWN = 10


def for_viewer(user) -> dict:
    """The snapshot as `user` may see it: without the workers of their secret models."""
    return snapshot(streams.client(), streams.keys(), hide=secret_slugs(user))


def page_context(user, now: float | None = None) -> dict:
    """What the status page and its socket render for `user` (templates/workers/_status.html)."""
    hide = secret_slugs(user)
    status = snapshot(streams.client(), streams.keys(), hide=hide, now=now)
    return {"status": status,
            "failures": recent_failures(hide=hide, node_names={n["node"]: n["name"] for n in status["nodes"]}),
            "preparations": preparations(hide=hide)}


def snapshot(client, keys, *, hide: frozenset[str] = frozenset(), now: float | None = None) -> dict:
    """{"running", "at", "nodes": [...], "workers": [...], "hidden": {...} | None,
    "cold_starts": {slug: {...}}}, without the workers of the `hide` slugs. Each shown worker
    and cold start carries its catalogue entry's `name` (its slug if the entry is gone)."""
    raw = client.get(keys.orchestrator_status())
    published = json.loads(raw) if raw else {"at": None, "nodes": [], "workers": []}
    now = time.time() if now is None else now
    status = {"at": published["at"], "running": bool(published["at"]) and now - published["at"] < STALE_AFTER_S}
    status["nodes"] = [shown_node(node, hidden_use=bool(hide)) for node in published["nodes"]]
    node_names = {node["node"]: node["name"] for node in status["nodes"]}
    shown = [w for w in published["workers"] if w.get("slug") not in hide]
    hidden = [w for w in published["workers"] if w.get("slug") in hide]
    cold_starts = cold_start_history(hide=hide)
    names = entry_names({w.get("slug") for w in shown} | set(cold_starts))
    for worker in shown:
        ready_at = worker.get("ready_at")
        worker["uptime_s"] = round(now - ready_at, 1) if ready_at else None
        worker["name"] = names.get(worker.get("slug"), worker.get("slug"))
        worker["node_name"] = worker.get("node_name") or node_names.get(worker.get("node")) or worker.get("node")
    for slug, row in cold_starts.items():
        row["name"] = names.get(slug, slug)
    status["workers"] = shown
    status["hidden"] = hidden_aggregate(hidden) if hide else None
    status["cold_starts"] = cold_starts
    return status


def shown_node(published: dict, *, hidden_use: bool = False) -> dict:
    """One node of the snapshot with every field of NODE_FIELDS (and `used_pct`, the reserved
    share of its budget). `hidden_use`: the viewer has secret models, so what is reserved or in
    use on the node is withheld (None); its totals and whether it is alive stay."""
    node = {name: published.get(name) for name in NODE_FIELDS}
    node["name"] = node["name"] or node["node"]
    node["alive"] = published.get("alive", True) is not False  # older snapshots listed live nodes only
    node["reason"] = node["reason"] or ""
    # [{"engine", "memory_mb"}]: processes started ahead, no model in them. Withheld like the node's use:
    # a node keeps them only while no worker loads or serves there.
    node["spares"] = None if hidden_use else node["spares"] or []
    node["resources"] = _resources(node["resources"])
    node["in_use"] = None if hidden_use else _resources(node["in_use"])
    if hidden_use:
        node["reserved_mb"] = None
    budget, reserved = node["budget_mb"], node["reserved_mb"]
    node["used_pct"] = min(100, round(100 * reserved / budget)) if budget and reserved is not None else None
    return node


def _resources(published) -> dict | None:
    """{"cpus", "gpus", "memory_mb"} as published (a missing one None), or None where there are none."""
    if not isinstance(published, dict):
        return None
    return {name: published.get(name) for name in RESOURCE_FIELDS}


def recent_failures(*, hide: frozenset[str] = frozenset(), node_names: dict | None = None,
                    limit: int = FAILURES_SHOWN) -> list[dict]:
    """The last `limit` workers that failed, newest first: when, which model, on which node (its
    readable name where the snapshot still lists it, else the recorded node id) and why (a lost
    machine, Ray's out-of-memory monitor, a load error). The `hide` models' failures are left
    out, not counted, and another model's reason that names one of them is redacted."""
    node_names = node_names or {}
    rows = list(WorkerProcess.objects.filter(state=WorkerProcess.State.FAILED).exclude(slug__in=hide)
                .order_by(F("ended_at").desc(nulls_last=True), "-id")[:limit])
    names = entry_names({row.slug for row in rows})
    return [{"at": row.ended_at or row.requested_at, "worker_id": row.worker_id, "slug": row.slug,
             "name": names.get(row.slug, row.slug), "node_id": row.node,
             "node": node_names.get(row.node) or row.node,
             "reason": redact(row.reason, hide)} for row in rows]


def entry_names(slugs) -> dict[str, str]:
    """{slug: catalogue name} for the entries that exist (people read names; slugs are for scripts)."""
    return dict(ModelEntry.objects.filter(slug__in=[s for s in slugs if s]).values_list("slug", "name"))


def human_duration(seconds) -> str:
    """"7.4 s", "52 s", "5 min 52 s", "2 h 5 min", "3 d 4 h": two units at most, none of them zero
    in front (a status page is read at a glance: "352 s" makes the reader divide by 60)."""
    if seconds is None:
        return "–"
    seconds = max(0.0, float(seconds))
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    for size, unit, smaller, small_unit in ((86400, "d", 3600, "h"), (3600, "h", 60, "min"), (60, "min", 1, "s")):
        if whole >= size:
            big, rest = divmod(whole, size)
            rest //= smaller
            return f"{big} {unit} {rest} {small_unit}" if rest else f"{big} {unit}"
    return f"{whole} s"


def hidden_aggregate(workers: list[dict]) -> dict | None:
    """The one line the hidden workers get: how many, and their requests in flight together."""
    if not workers:
        return None
    return {"label": HIDDEN_LABEL, "workers": len(workers),
            "in_flight": sum(w.get("in_flight") or 0 for w in workers)}


def cold_start_history(*, hide: frozenset[str] = frozenset()) -> dict[str, dict]:
    """Per variant: how many workers became ready, their mean cold start and the last one, in seconds,
    with when the last became ready. A cold start is what the orchestrator records: from its starting
    the worker to the worker ready (the model loaded and warmed up); the wait in line before it and
    the first answer's time to its first token after it are not in it."""
    started = WorkerProcess.objects.filter(cold_start_s__isnull=False).exclude(slug__in=hide)
    last = started.filter(slug=OuterRef("slug")).order_by("-ready_at", "-id")
    rows = started.values("slug").annotate(
        starts=Count("id"), mean_s=Avg("cold_start_s"),
        last_s=Subquery(last.values("cold_start_s")[:1]), last_at=Subquery(last.values("ready_at")[:1]))
    return {row["slug"]: {"starts": row["starts"], "mean_s": round(row["mean_s"], 1),
                          "last_s": round(row["last_s"], 1), "last_at": row["last_at"]} for row in rows}


def preparations(*, hide: frozenset[str] = frozenset()) -> list[tuple]:
    """The status page's "Models being prepared": every enabled AWQ entry with a published
    preparation (going on, or failed), but none of the `hide` entries (an AWQ contestant being
    quantised would announce its match)."""
    entries = list(ModelEntry.objects.enabled().filter(kind=ModelEntry.Kind.AWQ).exclude(slug__in=hide))
    found = preparation.published(entries)
    return [(e, found[e.slug]) for e in entries if e.slug in found]
