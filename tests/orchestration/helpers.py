"""What the orchestration tests share: a recorder, a tick loop, and a lease holder as the
application's tasks are one (`orchestration.client`)."""

from __future__ import annotations

import json
import threading
import time
import uuid

from inference import protocol
from inference.protocol import Job, ModelSpec, SamplingParams
from orchestration import client as orch
from orchestration.service import Orchestrator

# Leases that stay put while a test takes its time (back-offs, replacements) without renewing them.
HELD = {"wait_ttl_s": 60.0, "lease_ttl_s": 60.0}


class Recorder:
    """The orchestrator's Recorder for tests: (slug, state, reason) of every transition."""

    def __init__(self):
        self.transitions: list[tuple[str, str, str]] = []

    def transition(self, worker_id, slug, state, at, **fields):
        self.transitions.append((slug, state, fields.get("reason", "")))


def run_until(orchestrator: Orchestrator, condition, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        orchestrator.tick()
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError("condition not reached")


def lease(orchestrator: Orchestrator, request_id: str, *specs: ModelSpec) -> None:
    """Ask for (or renew) a lease, as a generation's or a battle's task does."""
    orch.request_lease(orchestrator.redis, orchestrator.keys, request_id, list(specs))


def acquired(orchestrator: Orchestrator, request_id: str, *specs: ModelSpec, timeout: float = 60) -> dict[str, str]:
    """Tick until the lease is granted, renewing it meanwhile as its holder would; slug -> worker id."""
    workers: dict[str, str] = {}

    def renewed_and_granted() -> bool:
        lease(orchestrator, request_id, *specs)
        workers.update(granted(orchestrator, request_id) or {})
        return bool(workers)

    run_until(orchestrator, renewed_and_granted, timeout)
    return workers


def release(orchestrator: Orchestrator, request_id: str) -> None:
    orch.release_lease(orchestrator.redis, orchestrator.keys, request_id)


def lease_state(orchestrator: Orchestrator, request_id: str) -> dict[str, str]:
    raw = orchestrator.redis.hgetall(orchestrator.keys.lease(request_id))
    return {k.decode(): v.decode() for k, v in raw.items()}


def granted(orchestrator: Orchestrator, request_id: str) -> dict[str, str] | None:
    """slug -> worker id once the lease is granted, else None."""
    state = lease_state(orchestrator, request_id)
    return json.loads(state["workers"]) if state.get("state") == "granted" else None


def placement(orchestrator: Orchestrator, slug: str) -> dict[str, str]:
    return orch.placement(orchestrator.redis, orchestrator.keys, slug)


class Acquiring(threading.Thread):
    """`orch.acquire` on a thread, as a generation's task calls it, while the test ticks the orchestrator."""

    def __init__(self, orchestrator: Orchestrator, request_id: str, specs: list[ModelSpec], timeout_s: float = 60):
        super().__init__(daemon=True)
        self.args = (orchestrator.redis, orchestrator.keys, request_id, specs)
        self.timeout_s = timeout_s
        self.workers: dict[str, str] | None = None
        self.error: orch.WorkerUnavailable | None = None
        self.heard: list[str] = []  # the progress lines on_wait was given

    def run(self) -> None:
        try:
            self.workers = orch.acquire(*self.args, timeout_s=self.timeout_s,
                                        on_wait=lambda _elapsed, progress: self.heard.append(progress))
        except orch.WorkerUnavailable as exc:
            self.error = exc

    @property
    def over(self) -> bool:
        return self.workers is not None or self.error is not None

    def started(self) -> Acquiring:
        self.start()
        return self


def generate(orchestrator: Orchestrator, worker_id: str) -> list[dict]:
    """One short greedy generation on the worker; its events up to the end."""
    job = Job(generation_id=uuid.uuid4().hex, messages=[{"role": "user", "content": "Say something."}],
              params=SamplingParams(temperature=0.0, max_new_tokens=8))
    orchestrator.redis.rpush(orchestrator.keys.worker_jobs(worker_id), job.to_json())
    key, last, events = orchestrator.keys.stream(job.generation_id), "0-0", []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for _, entries in orchestrator.redis.xread({key: last}, block=100, count=100) or []:
            for entry_id, fields in entries:
                last = entry_id
                events.append(protocol.parse_event(fields))
                if events[-1]["type"] in protocol.TERMINAL_EVENTS:
                    return events
    raise AssertionError(f"no end of the generation; got {[e['type'] for e in events]}")
