"""A real Ray cluster on this machine, for tests and benchmarks: raylets started by
`ray.cluster_utils.Cluster`, every one bound to 127.0.0.1, with token authentication on. Its
processes stop with `shutdown()` (and, should the process that started them die, with it: Ray's
reaper).

The head holds no resources (as docs/operations.md starts it): the orchestrator's driver attaches
to it, and only the nodes a test adds run model workers, each with the memory, CPUs and GPUs the
test declares (Ray's resources are declarations: a "GPU" here is a number, not a device).
"""

from __future__ import annotations

import secrets
from pathlib import Path

RAY_ENV = {
    # One machine: keep Ray on the loopback (it would rewrite 127.0.0.1 into the network address).
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_AUTH_MODE": "token",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_SCHEDULER_EVENTS": "0",
}
MB = 2**20


def token_file(folder: Path) -> Path:
    """The cluster's token, in a file only its owner reads (never on a command line)."""
    path = folder / "ray-token"
    if not path.exists():
        path.write_text(secrets.token_hex(32))
        path.chmod(0o600)
    return path


class RayNodes:
    """A cluster: `add` a node with resources, `remove` one as a machine would go.

    `set_ray_env` first: this process's environment is the head's and the driver's."""

    def __init__(self, node_env: dict[str, str]):
        from ray.cluster_utils import Cluster

        self.node_env = node_env
        self.cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "memory": 0, "node_ip_address": "127.0.0.1", "include_dashboard": False,
            "env_vars": node_env})
        self.nodes: dict[str, object] = {}  # name -> Ray's node object

    @property
    def address(self) -> str:
        return self.cluster.address

    def add(self, name: str, memory_mb: float, cpus: float = 2, gpus: float = 0) -> str:
        """A node with these resources; its Ray node id."""
        node = self.cluster.add_node(num_cpus=cpus, num_gpus=gpus, memory=int(memory_mb * MB),
                                     node_ip_address="127.0.0.1", node_name=name, env_vars=self.node_env)
        self.nodes[name] = node
        return node.node_id

    def remove(self, name: str) -> None:
        """The machine goes (shut down, or scaled away): its raylet is stopped, and every process on it."""
        self.cluster.remove_node(self.nodes.pop(name))

    def shutdown(self) -> None:
        import ray

        ray.shutdown()
        self.cluster.shutdown()


def ray_env(folder: Path) -> dict[str, str]:
    """The environment a cluster's head, its nodes and its drivers share (the token file in `folder`)."""
    return {**RAY_ENV, "RAY_AUTH_TOKEN_PATH": str(token_file(folder))}


def set_ray_env(monkeypatch, folder: Path) -> None:
    """`ray_env` in this process's environment for one test (pytest's monkeypatch)."""
    for name, value in ray_env(folder).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
