"""What this machine has: its memory, and its first GPU's (no torch import: cheap to ask)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess

from inference import config


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


def gpu_count() -> int:
    """How many NVIDIA GPUs this machine has, from nvidia-smi (0 without one)."""
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def resident_mb(pid: int | str = "self") -> float:
    """A process's resident memory, from /proc (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def descendants(pid: int) -> list[int]:
    """`pid`'s child processes, their children, and so on (a server's worker processes)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def _threads() -> list[int]:
    """This process's threads (0, the calling one, where /proc cannot tell)."""
    try:
        return [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


def keep_to_cpus() -> None:
    """Pin this process to the cores its orchestrator gave it (ARENA_WORKER_CPUS, "0,1"), before
    any thread starts: threads started later (OpenMP's, torch's, llama.cpp's) inherit the mask."""
    raw = config.current().worker_cpus
    if not raw or not hasattr(os, "sched_setaffinity"):
        return
    try:
        cpus = {int(c) for c in raw.split(",")}
        for thread in _threads():  # a spare worker imported torch first: any thread it started too
            os.sched_setaffinity(thread, cpus)
    except (ValueError, OSError):  # a core this machine lacks: run unpinned rather than not at all
        logging.getLogger(__name__).warning("Could not pin the worker to cores %s", raw)


def usable_cpus() -> list[int]:
    """The cores this process may run on (its affinity mask, where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))
