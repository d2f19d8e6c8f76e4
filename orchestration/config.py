"""Every environment variable of the project's own that orchestration/ reads, in one typed place.

`current()` reads the environment each time it is called, never at import (a Ray node's
environment, a test's `monkeypatch.setenv` or a dict passed in all count).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_CPU_SHARES = 2


@dataclass(frozen=True)
class Config:
    """The orchestrator's settings, each with its variable and default."""

    cpu_shares: int = DEFAULT_CPU_SHARES
    """ARENA_CPU_SHARES: the groups a node's cores are cut into, one per worker (at least 1;
    1: every worker may use every core; not a whole number: the default)."""
    node_memory_mb: float | None = None
    """ARENA_NODE_MEMORY_MB: the memory a node gives its workers (unset: measured,
    orchestration/resources.py)."""
    ray_address: str = ""
    """RAY_ADDRESS (Ray's own variable): the Ray cluster of ARENA_ORCHESTRATOR_BACKEND=ray, as
    "host:port" of its head or "ray://host:port" (Ray Client)."""
    spare_workers: tuple[str, ...] = ("transformers", "llamacpp")
    """ARENA_SPARE_WORKERS: the engines the local backend keeps a spare worker of (a process started
    ahead with the engine's libraries imported, which the next cold variant of it starts in;
    orchestration/backends/local.py), comma-separated; empty: none."""


def current(env: Mapping[str, str] | None = None) -> Config:
    """The settings in `env` (the process's environment by default), read now.

    Raises ValueError for an ARENA_NODE_MEMORY_MB that is not a positive number: a node must not
    guess how much memory it may use."""
    env = os.environ if env is None else env
    return Config(cpu_shares=_cpu_shares(env.get("ARENA_CPU_SHARES", "")),
                  node_memory_mb=_node_memory_mb(env.get("ARENA_NODE_MEMORY_MB", "")),
                  ray_address=env.get("RAY_ADDRESS", "").strip(),
                  spare_workers=_names(env["ARENA_SPARE_WORKERS"]) if "ARENA_SPARE_WORKERS" in env
                  else Config.spare_workers)


def _names(raw: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in raw.split(",") if name.strip())


def _cpu_shares(raw: str) -> int:
    try:
        return max(1, int(raw)) if raw.strip() else DEFAULT_CPU_SHARES
    except ValueError:
        return DEFAULT_CPU_SHARES


def _node_memory_mb(raw: str) -> float | None:
    if not raw.strip():
        return None
    value = float(raw)
    if value <= 0:
        raise ValueError(f"ARENA_NODE_MEMORY_MB must be positive, not {raw.strip()!r}.")
    return value
