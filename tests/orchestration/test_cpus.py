"""Cores as a budget (orchestration/cpus.py): a node's cores cut into equal groups, each new
worker pinned to the group the fewest live workers hold; and the backend and worker doing it."""

import os
import subprocess
import sys

import pytest

from inference.hardware import usable_cpus
from orchestration import config, cpus


def test_cores_are_cut_into_equal_consecutive_groups():
    assert cpus.groups([0, 1], 2) == [(0,), (1,)]
    assert cpus.groups([0, 1, 2, 3, 4], 2) == [(0, 1, 2), (3, 4)]
    assert cpus.groups([3, 1, 2, 0], 4) == [(0,), (1,), (2,), (3,)]
    assert cpus.groups([0], 2) == [(0,)]  # one core: one group, whatever the shares
    assert cpus.groups([0, 1, 2, 3], 1) == [(0, 1, 2, 3)]


def test_a_new_worker_gets_the_least_held_group():
    cores = [0, 1, 2, 3]
    assert cpus.assign(cores, 2, []) == (0, 1)
    assert cpus.assign(cores, 2, [(0, 1)]) == (2, 3)  # a battle's second side: the other half
    assert cpus.assign(cores, 2, [(0, 1), (2, 3)]) == (0, 1)  # a pre-warmed third shares, first on a tie
    assert cpus.assign(cores, 2, [(0, 1), (2, 3), (0, 1)]) == (2, 3)


def test_the_setting_defaults_to_two_shares_and_ignores_nonsense():
    assert config.current({}).cpu_shares == config.DEFAULT_CPU_SHARES == 2
    assert config.current({"ARENA_CPU_SHARES": "4"}).cpu_shares == 4
    assert config.current({"ARENA_CPU_SHARES": "0"}).cpu_shares == 1
    assert config.current({"ARENA_CPU_SHARES": "many"}).cpu_shares == 2


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this OS")
def test_a_worker_process_keeps_to_the_cores_it_was_given():
    """inference.hardware.keep_to_cpus in a real process: the mask and the thread count follow."""
    code = ("import os; from inference.hardware import keep_to_cpus; from inference.engines import worker_threads; "
            "keep_to_cpus(); print(sorted(os.sched_getaffinity(0)), worker_threads())")
    first = min(os.sched_getaffinity(0))
    env = {**os.environ, "ARENA_WORKER_CPUS": str(first)}
    env.pop("ARENA_WORKER_THREADS", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == [f"[{first}]", "1"]


def test_the_backend_pins_two_workers_to_different_cores(tmp_path):
    """LocalBackend hands each started worker its share through the environment."""
    from orchestration.backends.local import LocalBackend

    if len(usable_cpus()) < 2:
        pytest.skip("one core: nothing to share")
    backend = LocalBackend("redis://127.0.0.1:6379/0", "test-cpus", tmp_path, env={"ARENA_CPU_SHARES": "2"})
    backend.env.pop("ARENA_WORKER_THREADS", None)
    first, second = backend._cpu_share(), None
    backend._procs["w1"] = type("P", (), {"cpus": first, "popen": subprocess.Popen(["sleep", "5"])})()
    try:
        second = backend._cpu_share()
    finally:
        backend._procs["w1"].popen.kill()
        backend._procs["w1"].popen.wait()
    assert first and second and not set(first) & set(second)
    assert backend._cpu_share() == first  # the first worker exited: its cores are free again
