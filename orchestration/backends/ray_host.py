"""What runs inside a Ray actor, on the node Ray chose: one model worker process and its watch.

The actor is a small host for the same `python -m inference.worker` process the local backend
starts (a `LocalBackend` of one worker), so the worker and its protocol are the same on one
machine and on many: tokens and state go to Redis as always.

Everything secret comes from the node's own environment, never through Ray (Ray's dashboard
shows a runtime_env's env_vars and actor options): REDIS_URL with its password, the
ARENA_REDIS_TLS_* files, and ARENA_SECRETS_KEY, which opens the entry's sealed endpoint key
here, on the worker's own node. Its methods run one at a time on the actor's main thread,
which also started the worker: the worker's PDEATHSIG is tied to that thread, so a killed
actor (ray.kill, a lost node, Ray's out-of-memory monitor) takes its worker with it.
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

from inference import config as inference_config
from inference.protocol import ModelSpec
from orchestration.backends.local import LocalBackend

THREADS_ENV = "ARENA_WORKER_THREADS"


def worker_threads(spec: ModelSpec) -> int:
    """A worker runs as many threads as the CPUs it asked Ray for (at least one)."""
    return max(1, int(spec.cpus))


class WorkerHost:
    """One model worker on this node. Created by `RayBackend.start` through `ray.remote`."""

    def __init__(self, worker_id: str, spec_json: str, prefix: str):
        spec = ModelSpec.from_json(spec_json)
        env = dict(os.environ)
        # Ray already split the node's CPUs by request: no core pinning, as many threads as asked
        # for (an operator's own ARENA_WORKER_THREADS on the node wins).
        env.setdefault(THREADS_ENV, str(worker_threads(spec)))
        log_dir = Path(env.get("ARENA_WORKER_LOG_DIR") or Path(tempfile.gettempdir()) / "llm-arena-workers")
        self.worker_id = worker_id
        self.backend = LocalBackend(inference_config.current(env).redis_url, prefix, log_dir, env=env, budget_mb=0)
        self.pid = self.backend.start(worker_id, spec)

    def where(self) -> dict:
        """The node this actor runs on: Ray's node id, and a name people can read."""
        import ray

        return {"node_id": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(), "pid": self.pid}

    def poll(self) -> int | None:
        """The worker's exit code once it has exited, else None (a stop past its grace is SIGKILLed)."""
        return self.backend.poll(self.worker_id)

    def stop(self) -> None:
        self.backend.stop(self.worker_id)

    def kill(self) -> None:
        self.backend.kill(self.worker_id, wait=False)

    def log_tail(self, lines: int = 5) -> str:
        return self.backend.log_tail(self.worker_id, lines)
