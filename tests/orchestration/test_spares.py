"""Spare workers on the local backend, with real processes: a spare imports transformers ahead, the
next cold transformers variant starts in it (the same process), a new spare follows once the node
is quiet, and none outlives the orchestrator."""

from pathlib import Path

import psutil
import redis

from inference.protocol import Keys, ModelSpec
from orchestration.backends.local import LocalBackend
from orchestration.policy import Config
from orchestration.service import Orchestrator

from .helpers import Recorder, acquired, generate, release, run_until

IMPORTS_S = 240  # torch and transformers, on 2 shared cores under the suite's load


def spare_pids() -> set[int]:
    """This test's spare workers: the backend runs in this process, so they are its own children
    (their command line says --spare). Not its grandchildren: a live application that another test
    left running in this process (tests/live) keeps spares of its own."""
    found = set()
    for child in psutil.Process().children():
        try:
            if "--spare" in child.cmdline():
                found.add(child.pid)
        except psutil.Error:
            continue
    return found


def imported(logs: Path) -> bool:
    return any("imported in" in p.read_text(errors="replace") for p in logs.glob("spare-transformers-*.log"))


def test_a_cold_model_starts_in_the_spare_and_a_new_spare_follows(redis_url, redis_prefix, tmp_path, tiny_model_dir):
    logs = tmp_path / "logs"
    backend = LocalBackend(redis_url, redis_prefix, logs, env={"ARENA_WORKER_THREADS": "1"}, budget_mb=8000,
                           spares=("transformers",))
    orchestrator = Orchestrator(backend, redis.Redis.from_url(redis_url), Keys(redis_prefix), Config(),
                                recorder=Recorder())
    spec = ModelSpec(slug="tiny", source=str(tiny_model_dir), memory_mb=500)
    try:
        run_until(orchestrator, lambda: imported(logs), timeout=IMPORTS_S)
        [spare] = spare_pids()
        assert [s.engine for s in backend.spares()] == ["transformers"]
        assert backend.spares()[0].memory_mb >= 100  # torch's libraries, measured

        worker_id = acquired(orchestrator, "r1", spec, timeout=120)["tiny"]
        assert backend.pid(worker_id) == spare  # the spare became the worker
        worker_log = (logs / f"worker-{worker_id}.log").read_text()
        assert "Startup: assigned to a spare, imports 0.00 s" in worker_log
        assert generate(orchestrator, worker_id)[-1]["type"] == "done"
        release(orchestrator, "r1")

        run_until(orchestrator, lambda: bool(spare_pids() - {spare}), timeout=IMPORTS_S)  # quiet again: a new one
    finally:
        orchestrator.shutdown()
    assert spare_pids() == set()
