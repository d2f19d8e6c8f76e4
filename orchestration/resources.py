"""How much memory a node may give to model workers.

GPU memory when the node has a GPU (models live there), else RAM; minus headroom for
the operating system and the application's own processes. ARENA_NODE_MEMORY_MB
overrides the detection. No torch import: the orchestrator stays light.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping

HEADROOM_FRACTION = 0.2
HEADROOM_MIN_MB = 2048


def node_budget_mb(environ: Mapping[str, str] | None = None) -> float:
    env = os.environ if environ is None else environ
    override = env.get("ARENA_NODE_MEMORY_MB", "").strip()
    if override:
        value = float(override)
        if value <= 0:
            raise ValueError(f"ARENA_NODE_MEMORY_MB must be positive, not {override!r}.")
        return value
    total = gpu_memory_mb() or ram_mb()
    return max(total - max(total * HEADROOM_FRACTION, HEADROOM_MIN_MB), total * 0.5)


def ram_mb() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20


def gpu_memory_mb() -> float | None:
    """The first GPU's total memory, from nvidia-smi; None without one."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout
        return float(out.split()[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
