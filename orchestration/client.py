"""How the rest of the application asks the orchestrator for model workers: one way, a lease.

A caller leases the models it needs together (a battle's two, a single generation's one)
with `acquire`, renews the lease while it uses the workers and releases it when done.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict

import redis

from inference import protocol as p
from inference.protocol import Keys, ModelSpec
from orchestration.redis_text import text, text_hash


class WorkerUnavailable(Exception):
    """No worker can serve the model; the message is meant for the user."""


def request_lease(client: redis.Redis, keys: Keys, request_id: str, specs: list[ModelSpec],
                  prewarm: bool = False) -> None:
    """Ask for (or renew) a lease on `specs` together: granted when every one is ready.

    A holder renews it every second while it waits and every few seconds while it
    uses the workers; an unrenewed lease lapses (`Config.wait_ttl_s`, `lease_ttl_s`).
    A prewarm lease only starts what fits in free memory, and ends once they are ready.
    """
    message = {"op": "lease", "request_id": request_id, "specs": [asdict(s) for s in specs], "prewarm": prewarm}
    client.rpush(keys.orchestrator_inbox(), json.dumps(message))


def release_lease(client: redis.Redis, keys: Keys, request_id: str) -> None:
    client.rpush(keys.orchestrator_inbox(), json.dumps({"op": "release", "request_id": request_id}))


def acquire(client: redis.Redis, keys: Keys, request_id: str, specs: list[ModelSpec], *, timeout_s: float,
            on_wait: Callable[[float, str], object] | None = None,
            should_cancel: Callable[[], bool] | None = None, poll_s: float = 0.25) -> dict[str, str]:
    """Block until a lease on every one of `specs` is granted; returns slug -> worker id.

    `on_wait(elapsed, progress)` hears the place in line or the loading progress
    about once a second. Raises WorkerUnavailable when refused, when a model fails
    to load, when cancelled, or when nothing moves for `timeout_s` (a load that keeps
    reporting progress is waited for); the lease is then released, its place in line given up.
    """
    try:
        return _wait_for_grant(client, keys, request_id, specs, timeout_s, on_wait, should_cancel, poll_s)
    except WorkerUnavailable:
        with contextlib.suppress(redis.RedisError):  # unreleased, it lapses by itself
            release_lease(client, keys, request_id)
        raise


def _wait_for_grant(client: redis.Redis, keys: Keys, request_id: str, specs: list[ModelSpec], timeout_s: float,
                    on_wait: Callable[[float, str], object] | None, should_cancel: Callable[[], bool] | None,
                    poll_s: float) -> dict[str, str]:
    since = last_renewal = time.time()
    last_report = 0.0
    request_lease(client, keys, request_id, specs)
    while True:
        lease = text_hash(client.hgetall(keys.lease(request_id)))
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
            models = "The model" if len(specs) == 1 else "The models"
            raise WorkerUnavailable(f"{models} did not become ready within {timeout_s:.0f} s.")
        if should_cancel and should_cancel():
            raise WorkerUnavailable("cancelled")
        if now - last_renewal >= 1.0:
            request_lease(client, keys, request_id, specs)
            last_renewal = now
        if on_wait and now - since - last_report >= 1.0:
            on_wait(now - since, progress)
            last_report = now - since
        time.sleep(poll_s)


def ready_after(client: redis.Redis, keys: Keys, request_id: str) -> dict[str, float]:
    """Per model of a granted lease, the seconds after the lease arrived that its worker was ready (0 for
    a worker warm already); {} from an orchestrator that does not say."""
    raw = client.hget(keys.lease(request_id), "ready_after")
    try:
        return {str(slug): float(s) for slug, s in json.loads(text(raw)).items()} if raw else {}
    except (ValueError, TypeError, AttributeError):
        return {}


def lease_progress(client: redis.Redis, keys: Keys, request_id: str, specs: list[ModelSpec]) -> tuple[str, float]:
    """What the lease waits on, and when that was last said ("", 0 if nothing): memory (or a node)
    for its models to start, else the slowest-moving load among its models ("AWQ: quantised layer
    3/30"). Never a place in line: users hear theirs from the fair line alone (arena/generations/admission.py)."""
    queued = client.hget(keys.orchestrator_queue(), request_id)
    if queued:
        return _waiting_for(json.loads(queued)), 0.0
    reports = [load_progress(client, keys, spec.slug) for spec in specs]
    reports = [r for r in reports if r[0]]
    return min(reports, key=lambda r: r[1]) if reports else ("", 0.0)


def placement(client: redis.Redis, keys: Keys, slug: str) -> dict[str, str]:
    return text_hash(client.hgetall(keys.variant(slug)))


def worker_failure(client: redis.Redis, keys: Keys, worker_id: str) -> str | None:
    """Why the worker is no longer serving (failed or stopped), or None while it is."""
    status = text_hash(client.hgetall(keys.worker(worker_id)))
    state = status.get("state")
    if state in (p.W_FAILED, p.W_STOPPED):
        return status.get("error") or f"The model worker {state}."
    return None


def load_progress(client: redis.Redis, keys: Keys, slug: str) -> tuple[str, float]:
    """The latest progress line of the worker starting for `slug`, and when it said it ("", 0 if none)."""
    worker_id = placement(client, keys, slug).get("worker_id")
    if worker_id:
        line, at = client.hmget(keys.worker(worker_id), ["progress", "progress_at"])
        if line:
            return text(line), float(at or 0)
    return "", 0.0


def _waiting_for(entry: dict) -> str:
    """"waiting for memory (about 30 s)"."""
    wait = f" (about {entry['expected_wait_s']} s)" if entry.get("expected_wait_s") else ""
    return f"{entry['reason']}{wait}"
