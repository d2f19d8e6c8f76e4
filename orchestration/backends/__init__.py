"""Where worker processes run. The orchestrator talks to one backend through `Backend`.

- `local.LocalBackend`: subprocesses of the orchestrator, on this machine (one node, "local").
- `nodes.NodesBackend`: each machine runs an agent (`manage.py arena_agent`) that consumes
  its own Celery queue, starts and stops workers there and reports its budget and its
  workers to Redis; a node whose agent stops reporting is lost with its workers.
"""

from __future__ import annotations

from typing import Protocol

from inference.protocol import ModelSpec
from orchestration.policy import Node


class Backend(Protocol):
    def nodes(self) -> list[Node]:
        """The nodes workers may run on, with their budgets; a lost one is `alive=False`."""

    def start(self, worker_id: str, spec: ModelSpec, node_id: str) -> int | None:
        """Start a worker for `spec` on `node_id`; its pid when known at once."""

    def poll(self, worker_id: str) -> int | None:
        """The worker's exit code once it has exited, else None (running, or still starting)."""

    def stop(self, worker_id: str) -> None:
        """Ask the worker to stop (SIGTERM); it is killed if it does not stop in time."""

    def kill(self, worker_id: str) -> None: ...

    def log_tail(self, worker_id: str, lines: int = 5) -> str:
        """The last lines the worker logged ("" when unknown)."""

    def forget(self, worker_id: str) -> None:
        """The orchestrator is done with this exited worker."""

    def shutdown(self) -> None:
        """Stop every worker this backend started and wait for them."""

    def stop_orphan(self, pid: int, node_id: str) -> str:
        """Stop a worker process an earlier orchestrator left on `node_id`; say how it went."""
