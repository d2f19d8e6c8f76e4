"""The nodes backend: workers run on machines whose agents (`orchestration.agent`) the
orchestrator reaches over Celery, one queue per node, and hears from through the
reports the agents keep in Redis.

What it knows of a worker is what the latest report of its node says: listed with no
exit code, it runs; listed with one, it has exited. A worker the report does not list
yet (its start task is on its way) is still starting. A node whose report expired is
lost: `nodes()` says so (`alive=False`) for as long as workers of ours were on it, the
policy fails them, and `poll` calls them gone.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

import redis
from kombu.exceptions import OperationalError

from inference.protocol import Keys, ModelSpec
from orchestration import agent
from orchestration.policy import Node
from orchestration.redis_text import text

log = logging.getLogger(__name__)

START_GRACE_S = 60.0  # a worker its node does not list this long after the start was sent never started
START_EXPIRES_S = 60.0  # a start task not taken by then is dropped (the worker is failed meanwhile)
STOP_GRACE_S = 15.0  # the agent SIGKILLs a worker 10 s after its SIGTERM
GONE_EXIT = 255  # the exit code of a worker that vanished with its node, or never started


@dataclass
class _Placed:
    node_id: str
    sent_at: float  # time.monotonic() of the start task
    seen: bool = False  # listed in a report once
    stop_sent_at: float | None = None  # time.monotonic() of the last stop or kill sent


class NodesBackend:
    def __init__(self, celery_app, client: redis.Redis, keys: Keys, start_grace_s: float = START_GRACE_S):
        self.app = celery_app
        self.redis = client
        self.keys = keys
        self.start_grace_s = start_grace_s
        self._workers: dict[str, _Placed] = {}
        self._reports: dict[str, dict] = {}  # node id -> its latest report (live nodes only)
        self._budgets: dict[str, float] = {}  # node id -> last budget heard, for a lost node
        self._strays_stopped: set[str] = set()

    # --- what the nodes say -----------------------------------------------------------
    def refresh(self) -> None:
        """Read every node's report (once per orchestrator tick, from `nodes()`)."""
        members = {text(m) for m in self.redis.smembers(self.keys.nodes())}
        ids = sorted(members | {placed.node_id for placed in self._workers.values()})
        raws = self.redis.mget([self.keys.node(node_id) for node_id in ids]) if ids else []
        reports = {}
        for node_id, raw in zip(ids, raws, strict=True):
            if raw is None:
                continue
            try:
                reports[node_id] = json.loads(raw)
                self._budgets[node_id] = float(reports[node_id]["budget_mb"])
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("Ignoring node %s's unreadable report: %s", node_id, exc)
        self._reports = reports
        # An agent that left long ago: forget it (a live agent adds itself back with every report).
        departed = [n for n in members if n not in reports and not self._has_workers(n)]
        if departed:
            self.redis.srem(self.keys.nodes(), *departed)

    def nodes(self) -> list[Node]:
        self.refresh()
        self._stop_strays()
        self._retry_stops()
        alive = [Node(node_id, budget_mb=self._budgets[node_id]) for node_id in sorted(self._reports)]
        lost = sorted({p.node_id for p in self._workers.values() if p.node_id not in self._reports})
        return alive + [Node(node_id, budget_mb=self._budgets.get(node_id, 0.0), alive=False) for node_id in lost]

    def report(self, node_id: str) -> dict | None:
        """The node's latest report, or None if it is lost (or never reported)."""
        return self._reports.get(node_id)

    def _has_workers(self, node_id: str) -> bool:
        return any(placed.node_id == node_id for placed in self._workers.values())

    def _entry(self, worker_id: str) -> tuple[_Placed | None, dict | None, dict | None]:
        placed = self._workers.get(worker_id)
        if placed is None:
            return None, None, None
        report = self._reports.get(placed.node_id)
        entry = (report or {}).get("workers", {}).get(worker_id)
        if entry is not None:
            placed.seen = True
        return placed, report, entry

    def _stop_strays(self) -> None:
        """Stop running workers no orchestrator asked for: an earlier orchestrator's, or
        those of a node that came back after it was declared lost (its workers failed over)."""
        for node_id, report in self._reports.items():
            for worker_id, entry in report.get("workers", {}).items():
                if entry.get("exit_code") is None and worker_id not in self._workers \
                        and worker_id not in self._strays_stopped:
                    log.warning("Stopping worker %s on node %s: no orchestrator placed it", worker_id, node_id)
                    self._send(agent.STOP_TASK, [worker_id], node_id)
                    self._strays_stopped.add(worker_id)

    def _retry_stops(self) -> None:
        """A worker still running well past its stop (the task was lost): kill it."""
        now = time.monotonic()
        for worker_id, placed in self._workers.items():
            if placed.stop_sent_at is not None and now - placed.stop_sent_at > STOP_GRACE_S \
                    and self.poll(worker_id) is None:
                log.warning("Worker %s on node %s still runs %.0f s after its stop: killing it",
                            worker_id, placed.node_id, now - placed.stop_sent_at)
                self.kill(worker_id)

    # --- the Backend interface --------------------------------------------------------
    def start(self, worker_id: str, spec: ModelSpec, node_id: str) -> None:
        self._workers[worker_id] = _Placed(node_id, sent_at=time.monotonic())
        self._send(agent.START_TASK, [worker_id, spec.to_json()], node_id, expires=START_EXPIRES_S)
        return None  # the pid is known once the node reports it

    def pid(self, worker_id: str) -> int | None:
        _placed, _report, entry = self._entry(worker_id)
        return entry.get("pid") if entry else None

    def node_of(self, worker_id: str) -> str | None:
        placed = self._workers.get(worker_id)
        return placed.node_id if placed else None

    def poll(self, worker_id: str) -> int | None:
        placed, report, entry = self._entry(worker_id)
        if placed is None:
            return None
        if report is None:
            return GONE_EXIT  # gone with its node
        if entry is None:
            starting = not placed.seen and time.monotonic() - placed.sent_at < self.start_grace_s
            return None if starting else GONE_EXIT
        return entry.get("exit_code")

    def log_tail(self, worker_id: str, lines: int = 5) -> str:
        placed, report, entry = self._entry(worker_id)
        if placed is None or report is None:
            return ""
        if entry is None:
            if not placed.seen and time.monotonic() - placed.sent_at < self.start_grace_s:
                return ""
            return (f"Node {placed.node_id} has no such worker: it never started it, or its agent restarted."
                    if not placed.seen else f"Node {placed.node_id} no longer lists this worker.")
        return "\n".join((entry.get("log_tail") or "").splitlines()[-lines:])

    def stop(self, worker_id: str) -> None:
        self._send_to_worker(agent.STOP_TASK, worker_id)

    def kill(self, worker_id: str) -> None:
        self._send_to_worker(agent.KILL_TASK, worker_id)

    def forget(self, worker_id: str) -> None:
        self._workers.pop(worker_id, None)

    def stop_orphan(self, pid: int, node_id: str) -> str:
        if pid <= 0:
            return "already gone"
        if node_id not in self._reports:
            self.refresh()
        if node_id not in self._reports:
            return f"node {node_id} is gone, and its workers with it"
        self._send(agent.STOP_ORPHAN_TASK, [pid], node_id)
        return f"asked node {node_id} to stop it"

    def shutdown(self, timeout: float = STOP_GRACE_S) -> None:
        """Stop every worker this backend started and wait until their nodes report them exited."""
        self.refresh()
        for worker_id in list(self._workers):
            if self.poll(worker_id) is None:
                self.stop(worker_id)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(self.poll(w) is None for w in self._workers):
            time.sleep(0.2)
            self.refresh()
        left = [w for w in self._workers if self.poll(w) is None]
        if left:
            log.warning("Workers still running after the shutdown grace: %s", ", ".join(left))
        self._workers.clear()

    # --- sending ----------------------------------------------------------------------
    def _send_to_worker(self, task: str, worker_id: str) -> None:
        placed = self._workers.get(worker_id)
        if placed is not None and placed.node_id in self._reports:  # a lost node's workers are gone already
            placed.stop_sent_at = time.monotonic()
            self._send(task, [worker_id], placed.node_id)

    def _send(self, task: str, args: list, node_id: str, expires: float | None = None) -> None:
        """Send a task to the node's agent. A task that cannot be sent (the broker is down after
        Celery's retries) is logged, not raised: a start never listed fails after the start grace,
        and a worker still running past its stop's grace is sent a kill (`_retry_stops`)."""
        try:
            self.app.send_task(task, args=args, queue=self.keys.node_queue(node_id), expires=expires)
        except (OperationalError, redis.RedisError) as exc:
            log.warning("Could not send %s to node %s: %s", task, node_id, exc)
