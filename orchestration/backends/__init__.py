"""Where worker processes run. The orchestrator talks to one backend through `Backend`.

- `local.LocalBackend`: subprocesses of the orchestrator, on this machine (one node, "local").
- `ray_cluster.RayBackend`: each worker in a Ray actor (`ray_host.WorkerHost`) on the node of a
  Ray cluster that Ray chooses; Ray reports the nodes, notices their loss and can add nodes.
"""

from __future__ import annotations

from typing import Protocol

from inference.protocol import ModelSpec
from orchestration.policy import Node, Spare


class Backend(Protocol):
    elastic: bool  # nodes may join: a request no node can hold waits instead of being refused
    reserves_requested: bool  # a worker holds its requested memory for its life, whatever it measures

    def nodes(self) -> list[Node]:
        """The nodes workers may run on, with their budgets; a lost one is `alive=False`."""

    def describe_nodes(self) -> list[dict]:
        """The nodes for the status page (docs in orchestration/service.py `_publish_status`)."""

    def node_name(self, node_id: str) -> str:
        """A node's name people can read (an address)."""

    def start(self, worker_id: str, spec: ModelSpec, node_id: str) -> int | None:
        """Start a worker for `spec` on `node_id` (a preference where the backend places it); its pid when known."""

    def node_of(self, worker_id: str) -> str | None:
        """The node the worker runs on, once known."""

    def poll(self, worker_id: str) -> int | None:
        """The worker's exit code once it has exited, else None (running, or still starting)."""

    def exit_reason(self, worker_id: str) -> str:
        """Why the backend's cluster ended the worker, for people ("" when its exit code says it all)."""

    def stop(self, worker_id: str) -> None:
        """Ask the worker to stop (SIGTERM); it is killed if it does not stop in time."""

    def kill(self, worker_id: str) -> None: ...

    def log_tail(self, worker_id: str, lines: int = 5) -> str:
        """The last lines the worker logged ("" when unknown)."""

    def forget(self, worker_id: str) -> None:
        """The orchestrator is done with this exited worker."""

    def demand(self, specs: list[ModelSpec]) -> None:
        """The resources of the workers wanted now (running and waiting), for a cluster that can grow."""

    def shutdown(self) -> None:
        """Stop every worker this backend started and wait for them."""

    def stop_orphan(self, pid: int, node_id: str) -> str:
        """Stop a worker process an earlier orchestrator left on `node_id`; say how it went."""

    def spare_sizes(self) -> dict[str, float]:
        """engine -> the memory one spare worker of it holds, for the engines it keeps spares of ({}: none)."""

    def spares(self) -> list[Spare]:
        """The spare workers alive now (started ahead, no model yet), with the memory each holds."""

    def start_spare(self, engine: str, node_id: str) -> None:
        """Start a spare of `engine` on the node; the next worker of that engine started there takes it over."""

    def drop_spare(self, engine: str, node_id: str) -> None:
        """Stop that spare and wait for it: its memory is free when this returns."""
