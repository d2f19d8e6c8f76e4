"""A node agent: runs on each machine of a several-machine arena and starts workers there.

    python manage.py arena_agent --node-id gpu1 [--budget-mb N]

It consumes its own Celery queue (`Keys.node_queue`) with the solo pool, so its tasks
(`orchestration.tasks`: start, stop, kill a worker; stop an orphan) run in this process,
which owns the worker subprocesses through a `LocalBackend`. A reporter thread writes the
node's report (`Keys.node`) every second with a TTL of a few seconds: the budget, the host,
and each worker it started with its exit code (None while running) and, once exited, the
last lines of its log. An agent that stops reporting is lost: the orchestrator fails its
workers and places them elsewhere. Its workers die with it (PDEATHSIG in the worker).

Django-free: the management command builds it from the settings.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass

import redis

from inference.protocol import Keys, ModelSpec
from orchestration.backends.local import LocalBackend

log = logging.getLogger(__name__)

# Task names: the orchestrator sends them by name, without importing the tasks.
START_TASK = "orchestration.agent.start_worker"
STOP_TASK = "orchestration.agent.stop_worker"
KILL_TASK = "orchestration.agent.kill_worker"
STOP_ORPHAN_TASK = "orchestration.agent.stop_orphan"

REPORT_INTERVAL_S = 1.0
REPORT_TTL_S = 5  # a node whose report is older than this is lost
EXITED_KEEP_S = 600.0  # an exited worker stays in the report this long, for the orchestrator to read its exit
START_FAILED_EXIT = 127  # the agent could not even start the process


@dataclass
class _Worker:
    started_at: float
    pid: int | None = None
    exit_code: int | None = None
    log_tail: str = ""
    exited_at: float | None = None


class Agent:
    def __init__(self, node_id: str, budget_mb: float, client: redis.Redis, keys: Keys, backend: LocalBackend,
                 report_interval_s: float = REPORT_INTERVAL_S, report_ttl_s: int = REPORT_TTL_S):
        self.node_id = node_id
        self.budget_mb = budget_mb
        self.redis = client
        self.keys = keys
        self.backend = backend
        self.report_interval_s = report_interval_s
        self.report_ttl_s = report_ttl_s
        self.hostname = socket.gethostname()
        self._workers: dict[str, _Worker] = {}
        self._lock = threading.Lock()  # tasks (main thread) and the reporter share the backend
        self._stopping = threading.Event()
        self._reporter: threading.Thread | None = None

    @property
    def queue(self) -> str:
        return self.keys.node_queue(self.node_id)

    # --- tasks ----------------------------------------------------------------------
    def start_worker(self, worker_id: str, spec_json: str) -> None:
        with self._lock:
            if worker_id in self._workers or self._stopping.is_set():
                return  # a duplicate delivery, or too late
            worker = self._workers[worker_id] = _Worker(started_at=time.time())
            try:
                worker.pid = self.backend.start(worker_id, ModelSpec.from_json(spec_json), self.node_id)
            except Exception as exc:  # a bad spec, no disk for the log: reported, never raised
                log.exception("Could not start worker %s", worker_id)
                worker.exit_code, worker.exited_at = START_FAILED_EXIT, time.time()
                worker.log_tail = f"Node {self.node_id} could not start the worker: {exc}"
        log.info("Started worker %s (pid %s)", worker_id, worker.pid)
        self.report()  # listed at once: the orchestrator sees it started

    def stop_worker(self, worker_id: str) -> None:
        with self._lock:
            self.backend.stop(worker_id)  # SIGTERM; the reporter's poll SIGKILLs it after the grace

    def kill_worker(self, worker_id: str) -> None:
        with self._lock:
            self.backend.kill(worker_id, wait=False)  # the reporter reaps it and reports the exit

    def stop_orphan(self, pid: int) -> str:
        """Stop a worker by pid: one of this agent's own, or one an earlier agent left."""
        with self._lock:
            for worker_id, worker in self._workers.items():
                if worker.pid == pid and worker.exit_code is None:
                    self.backend.stop(worker_id)
                    return "stopping"
        return self.backend.stop_orphan(pid)

    # --- the report -----------------------------------------------------------------
    def snapshot(self) -> dict:
        """The report: polls every worker (reaping exits, SIGKILLing overdue stops)."""
        now = time.time()
        with self._lock:
            for worker_id, worker in list(self._workers.items()):
                if worker.exit_code is None:
                    code = self.backend.poll(worker_id)
                    if code is not None:
                        worker.exit_code, worker.exited_at = code, now
                        worker.log_tail = self.backend.log_tail(worker_id, lines=5)[-2000:]
                        log.info("Worker %s exited with code %s", worker_id, code)
                if worker.exited_at is not None and now - worker.exited_at > EXITED_KEEP_S:
                    del self._workers[worker_id]
                    self.backend.forget(worker_id)
            workers = {
                worker_id: {"pid": w.pid, "started_at": w.started_at, "exit_code": w.exit_code, "log_tail": w.log_tail}
                for worker_id, w in self._workers.items()
            }
        return {"node": self.node_id, "budget_mb": self.budget_mb, "hostname": self.hostname, "pid": os.getpid(),
                "at": now, "workers": workers}

    def report(self) -> None:
        if self._stopping.is_set():
            return  # a stopping agent's node is already gone
        body = json.dumps(self.snapshot())
        pipe = self.redis.pipeline()
        pipe.set(self.keys.node(self.node_id), body, ex=self.report_ttl_s)
        pipe.sadd(self.keys.nodes(), self.node_id)
        pipe.execute()

    def _report_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                self.report()
            except redis.RedisError as exc:  # Redis restarting: the node looks lost meanwhile
                log.warning("Could not report: %s", exc)
            except Exception:  # never let the reporter die: a silent node loses its workers
                log.exception("Report failed")
            self._stopping.wait(self.report_interval_s)

    # --- lifetime -------------------------------------------------------------------
    def start_reporting(self) -> None:
        self.report()
        self._reporter = threading.Thread(target=self._report_loop, name=f"agent-{self.node_id}-reporter", daemon=True)
        self._reporter.start()

    def close(self) -> None:
        """Leave cleanly: the node vanishes at once (its workers fail over), then its workers stop."""
        self._stopping.set()
        if self._reporter is not None:
            self._reporter.join(timeout=10)
        try:
            self.redis.delete(self.keys.node(self.node_id))
            self.redis.srem(self.keys.nodes(), self.node_id)
        except redis.RedisError as exc:
            log.warning("Could not remove the node's report (it expires by itself): %s", exc)
        with self._lock:
            self.backend.shutdown()


_current: Agent | None = None


def current() -> Agent:
    """The agent of this process, for its tasks."""
    if _current is None:
        raise RuntimeError("No node agent runs in this process: node tasks belong on a node's queue.")
    return _current


def serve(app, agent: Agent, loglevel: str = "INFO") -> int:
    """Consume the node's queue in this process until SIGTERM/SIGINT; then stop every worker.

    The solo pool runs each task in this (main) thread: the workers it starts are its
    children, and their PDEATHSIG is tied to a thread that lives as long as the agent.
    """
    global _current
    from orchestration import tasks

    tasks.register(app)

    app.conf.worker_enable_remote_control = False  # nothing broadcasts to agents
    _current = agent
    agent.start_reporting()
    try:
        worker = app.Worker(
            hostname=f"agent-{agent.node_id}@{agent.hostname}",
            queues=[agent.queue],
            pool_cls="solo",
            concurrency=1,
            prefetch_multiplier=1,
            without_mingle=True,
            without_gossip=True,
            without_heartbeat=True,
            loglevel=loglevel,
            quiet=True,
        )
        worker.start()
        return worker.exitcode or 0
    finally:
        agent.close()
        _current = None
