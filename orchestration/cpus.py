"""Cores are a budget like memory: which of a node's cores a new worker may use.

Every worker used to take all of a node's threads, so the two sides of a battle (and a
pre-warmed pair beside them) fought over the same cores: on 2 cores a speculative entry
decoded at 1 token/s beside plain SmolLM2. Instead a node's cores are cut into `shares`
equal groups (ARENA_CPU_SHARES, default 2: a comparison's two sides; orchestration/config.py), and each worker is
pinned to one group, the one the fewest live workers hold, with as many threads as the
group has cores. Two workers decoding at once then never oversubscribe the node, and the
speeds a comparison shows are each measured on an equal share. Pure: the backend passes the
node's cores (inference.hardware.usable_cpus) and what its live workers hold.
"""

from __future__ import annotations

from collections.abc import Sequence


def groups(cores: Sequence[int], shares: int) -> list[tuple[int, ...]]:
    """`cores` cut into min(shares, len(cores)) groups of consecutive cores, as equal as can be."""
    cores = sorted(cores)
    count = max(1, min(shares, len(cores)))
    size, extra = divmod(len(cores), count)
    out, start = [], 0
    for i in range(count):
        end = start + size + (1 if i < extra else 0)
        out.append(tuple(cores[start:end]))
        start = end
    return out


def assign(cores: Sequence[int], shares: int, held: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """The group a new worker gets: the one held by the fewest live workers (the first on a tie)."""
    options = groups(cores, shares)
    return min(options, key=lambda group: (sum(1 for h in held if h == group), options.index(group)))


def worker_env(cpus: tuple[int, ...]) -> dict[str, str]:
    """What a worker is started with to keep to its cores (read by inference.engines)."""
    return {"ARENA_WORKER_CPUS": ",".join(map(str, cpus))}
