"""How much memory a node may give to model workers.

GPU memory when the node has a GPU (models live there), else RAM; minus headroom for
the operating system and the application's own processes. ARENA_NODE_MEMORY_MB
overrides the detection. No torch import: the orchestrator stays light.
"""

from __future__ import annotations

from collections.abc import Mapping

from inference.hardware import gpu_memory_mb, ram_mb
from orchestration import config

HEADROOM_FRACTION = 0.2
HEADROOM_MIN_MB = 2048


def node_budget_mb(environ: Mapping[str, str] | None = None) -> float:
    override = config.current(environ).node_memory_mb
    if override is not None:
        return override
    total = gpu_memory_mb() or ram_mb()
    return max(total - max(total * HEADROOM_FRACTION, HEADROOM_MIN_MB), total * 0.5)
