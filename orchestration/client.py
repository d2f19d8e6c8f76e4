"""How the rest of the application asks the orchestrator for a model worker."""

from __future__ import annotations

import json
import time
from dataclasses import asdict

import redis

from inference import protocol as p
from inference.protocol import Keys, ModelSpec


class WorkerUnavailable(Exception):
    """No worker can serve the model; the message is meant for the user."""


def ensure(client: redis.Redis, keys: Keys, spec: ModelSpec) -> None:
    """Ask for a worker serving `spec` (renewed while waiting: requests expire)."""
    client.rpush(keys.orchestrator_inbox(), json.dumps({"op": "ensure", "spec": asdict(spec)}))


def request_lease(client: redis.Redis, keys: Keys, request_id: str, specs: list[ModelSpec], prewarm: bool = False) -> None:
    """Ask for (or renew) a lease on `specs` together: granted when every one is ready.

    A holder renews it every few seconds while it uses the workers (a battle in
    progress); an unrenewed lease lapses after the orchestrator's lease TTL. A
    prewarm lease only starts what fits in free memory, and ends once they are ready.
    """
    message = {"op": "lease", "request_id": request_id, "specs": [asdict(s) for s in specs], "prewarm": prewarm}
    client.rpush(keys.orchestrator_inbox(), json.dumps(message))


def release_lease(client: redis.Redis, keys: Keys, request_id: str) -> None:
    client.rpush(keys.orchestrator_inbox(), json.dumps({"op": "release", "request_id": request_id}))


def acquire(client, keys, request_id: str, specs: list[ModelSpec], *, timeout_s: float, on_wait=None,
            should_cancel=None, poll_s: float = 0.25) -> dict[str, str]:
    """Block until a lease on every one of `specs` is granted; returns slug -> worker id.

    `on_wait(elapsed, progress)` hears the place in line or the loading progress
    about once a second. Raises WorkerUnavailable when refused, when a model fails
    to load, or when nothing moves for `timeout_s`.
    """
    since = last_renewal = time.time()
    last_report = 0.0
    request_lease(client, keys, request_id, specs)
    while True:
        lease = {k.decode(): v.decode() for k, v in client.hgetall(keys.lease(request_id)).items()}
        if lease.get("state") == "granted" and lease.get("workers"):
            return json.loads(lease["workers"])
        if lease.get("state") == "refused":
            raise WorkerUnavailable(lease.get("reason") or "The orchestrator refused the request.")
        for spec in specs:
            failed = placement(client, keys, spec.slug)
            if float(failed.get("last_error_at") or 0) >= since:
                raise WorkerUnavailable(failed.get("last_error") or f"The model {spec.slug} failed to load.")
        now = time.time()
        progress, progress_at = lease_progress(client, keys, request_id, specs)
        if now - max(since, progress_at) > timeout_s:
            raise WorkerUnavailable(f"The models did not become ready within {timeout_s:.0f} s.")
        if should_cancel and should_cancel():
            release_lease(client, keys, request_id)
            raise WorkerUnavailable("cancelled")
        if now - last_renewal >= 1.0:
            request_lease(client, keys, request_id, specs)
            last_renewal = now
        if on_wait and now - since - last_report >= 1.0:
            on_wait(now - since, progress)
            last_report = now - since
        time.sleep(poll_s)


def lease_progress(client, keys, request_id: str, specs: list[ModelSpec]) -> tuple[str, float]:
    """The lease's place in line, else the slowest-moving loading progress among its models."""
    queued = client.hget(keys.orchestrator_queue(), request_id)
    if queued:
        return _in_line(json.loads(queued)), 0.0
    reports = [load_progress(client, keys, spec.slug) for spec in specs]
    reports = [r for r in reports if r[0]]
    return min(reports, key=lambda r: r[1]) if reports else ("", 0.0)


def placement(client: redis.Redis, keys: Keys, slug: str) -> dict[str, str]:
    raw = client.hgetall(keys.variant(slug))
    return {k.decode(): v.decode() for k, v in raw.items()}


def ready_worker(client: redis.Redis, keys: Keys, spec: ModelSpec, since: float) -> str | None:
    """The id of a ready worker for `spec`, or None while one is starting.

    Raises WorkerUnavailable when the model failed to load after `since`.
    """
    place = placement(client, keys, spec.slug)
    state = place.get("state")
    if state == "ready" and worker_alive(client, keys, place["worker_id"]):
        return place["worker_id"]
    if float(place.get("last_error_at") or 0) >= since:
        raise WorkerUnavailable(place.get("last_error") or "The model worker failed.")
    ensure(client, keys, spec)
    return None


def worker_alive(client: redis.Redis, keys: Keys, worker_id: str) -> bool:
    state = client.hget(keys.worker(worker_id), "state")
    return state is not None and state.decode() == p.W_READY


def worker_failure(client: redis.Redis, keys: Keys, worker_id: str) -> str | None:
    """Why the worker is no longer serving (failed or stopped), or None while it is."""
    status = {k.decode(): v.decode() for k, v in client.hgetall(keys.worker(worker_id)).items()}
    state = status.get("state")
    if state in (p.W_FAILED, p.W_STOPPED):
        return status.get("error") or f"The model worker {state}."
    return None


def wait_for_worker(client, keys, spec, *, timeout_s: float, on_wait=None, should_cancel=None, poll_s=0.25) -> str:
    """Block until a worker serves `spec`; call `on_wait(elapsed, progress)` about once a second.

    `progress` is what a slow load last said of itself ("AWQ: quantised layer 3/30"),
    or "". A load that keeps reporting progress is waited for past `timeout_s`.
    """
    since = time.time()
    last_report = 0.0
    while True:
        worker_id = ready_worker(client, keys, spec, since)
        if worker_id:
            return worker_id
        progress, progress_at = load_progress(client, keys, spec.slug)
        now = time.time()
        elapsed = now - since
        if now - max(since, progress_at) > timeout_s:
            raise WorkerUnavailable(f"The model did not become ready within {timeout_s:.0f} s.")
        if should_cancel and should_cancel():
            raise WorkerUnavailable("cancelled")
        if on_wait and elapsed - last_report >= 1.0:
            on_wait(elapsed, progress)
            last_report = elapsed
        time.sleep(poll_s)


def load_progress(client: redis.Redis, keys: Keys, slug: str) -> tuple[str, float]:
    """What the start of `slug` is doing now, and when that was last said ("", 0 if nothing).

    The starting worker's own progress line ("AWQ: quantised layer 3/30"), or, while
    no worker has started yet, the variant's place in the orchestrator's queue.
    """
    worker_id = placement(client, keys, slug).get("worker_id")
    if worker_id:
        line, at = client.hmget(keys.worker(worker_id), ["progress", "progress_at"])
        if line:
            return line.decode(), float(at or 0)
    queued = client.hget(keys.orchestrator_queue(), slug)
    return (_in_line(json.loads(queued)), 0.0) if queued else ("", 0.0)


def _in_line(entry: dict) -> str:
    wait = f", about {entry['expected_wait_s']} s" if entry.get("expected_wait_s") else ""
    return f"{entry['reason']} ({_ordinal(entry['position'])} in line{wait})"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
