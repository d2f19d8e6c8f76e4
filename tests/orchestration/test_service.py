"""The orchestrator service with the local backend: real worker processes (serving a
tiny random-weight model), real Redis, real time with short timeouts."""

import json
import os
import signal
import time

import pytest
import redis

from inference.protocol import Keys, ModelSpec
from orchestration import client as orch
from orchestration.backends.local import LocalBackend
from orchestration.policy import Config
from orchestration.service import Orchestrator

pytestmark = pytest.mark.timeout(120)


class Recorder:
    def __init__(self):
        self.transitions = []

    def transition(self, worker_id, slug, state, at, **fields):
        self.transitions.append((slug, state, fields.get("reason", "")))


@pytest.fixture
def make_orchestrator(redis_url, redis_prefix, tmp_path):
    made = []

    def make(budget_mb=None, env=None, **config):
        backend = LocalBackend(redis_url, redis_prefix, tmp_path / "logs",
                               env={"ARENA_WORKER_THREADS": "1", **(env or {})}, budget_mb=budget_mb)
        recorder = Recorder()
        orchestrator = Orchestrator(backend, redis.Redis.from_url(redis_url), Keys(redis_prefix),
                                    Config(**config), recorder=recorder)
        made.append(orchestrator)
        return orchestrator, recorder

    yield make
    for orchestrator in made:
        orchestrator.shutdown()


def run_until(orchestrator, condition, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        orchestrator.tick()
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError("condition not reached")


def ensure(orchestrator, spec):
    orch.ensure(orchestrator.redis, orchestrator.keys, spec)


def placement(orchestrator, slug):
    return orch.placement(orchestrator.redis, orchestrator.keys, slug)


def test_a_requested_model_is_started_then_unloaded_after_the_keep_alive(make_orchestrator, tiny_model_dir):
    orchestrator, recorder = make_orchestrator(keep_alive_s=1.0, want_ttl_s=0.5)
    spec = ModelSpec(slug="tiny", source=str(tiny_model_dir))
    ensure(orchestrator, spec)
    run_until(orchestrator, lambda: placement(orchestrator, "tiny").get("state") == "ready")
    (worker_id,) = orchestrator.workers
    pid = orchestrator.backend.pid(worker_id)
    run_until(orchestrator, lambda: not orchestrator.workers)  # idle past the keep-alive: stopped
    assert [state for _slug, state, _ in recorder.transitions] == ["starting", "ready", "stopping", "stopped"]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_model_that_fails_to_load_is_reported_with_its_reason(make_orchestrator, tmp_path):
    orchestrator, _ = make_orchestrator()
    (tmp_path / "empty").mkdir()
    ensure(orchestrator, ModelSpec(slug="broken", source=str(tmp_path / "empty")))
    run_until(orchestrator, lambda: placement(orchestrator, "broken").get("state") == "failed")
    assert "load" in placement(orchestrator, "broken")["error"].lower()


def test_a_worker_whose_install_is_broken_fails_with_the_import_error(make_orchestrator, tiny_model_dir, tmp_path):
    shadow = tmp_path / "shadow" / "transformers"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('transformers is broken in this environment')\n")
    orchestrator, _ = make_orchestrator(env={"PYTHONPATH": str(shadow.parent)})
    ensure(orchestrator, ModelSpec(slug="tiny", source=str(tiny_model_dir)))
    run_until(orchestrator, lambda: placement(orchestrator, "tiny").get("state") == "failed")
    assert "transformers is broken in this environment" in placement(orchestrator, "tiny")["last_error"]


def test_a_worker_killed_while_loading_fails_visibly_then_the_retry_serves(make_orchestrator, tiny_model_dir):
    """What the kernel's out-of-memory killer does to a worker: SIGKILL in the middle of its load."""
    orchestrator, recorder = make_orchestrator(want_ttl_s=60)
    ensure(orchestrator, ModelSpec(slug="tiny", source=str(tiny_model_dir)))
    run_until(orchestrator, lambda: placement(orchestrator, "tiny").get("state") == "starting")
    (loading,) = orchestrator.workers
    os.kill(orchestrator.backend.pid(loading), signal.SIGKILL)
    run_until(orchestrator, lambda: placement(orchestrator, "tiny").get("last_error"))
    assert "killed by signal 9" in placement(orchestrator, "tiny")["last_error"]
    run_until(orchestrator, lambda: placement(orchestrator, "tiny").get("state") == "ready")  # after the back-off
    assert [state for slug, state, _ in recorder.transitions][:2] == ["starting", "failed"]


def test_a_hung_worker_is_killed_and_replaced(make_orchestrator, tiny_model_dir):
    orchestrator, recorder = make_orchestrator(heartbeat_grace_s=1.0, want_ttl_s=60)
    spec = ModelSpec(slug="tiny", source=str(tiny_model_dir))
    ensure(orchestrator, spec)
    run_until(orchestrator, lambda: placement(orchestrator, "tiny").get("state") == "ready")
    (hung,) = orchestrator.workers
    os.kill(orchestrator.backend.pid(hung), signal.SIGSTOP)  # alive, but silent
    run_until(orchestrator, lambda: hung not in orchestrator.workers and placement(orchestrator, "tiny").get("state") == "ready")
    assert any(state == "failed" and "heartbeat" in reason for _slug, state, reason in recorder.transitions)
    assert placement(orchestrator, "tiny")["worker_id"] != hung


def test_shutdown_stops_every_worker(make_orchestrator, tiny_model_dir):
    orchestrator, _ = make_orchestrator()
    ensure(orchestrator, ModelSpec(slug="tiny", source=str(tiny_model_dir)))
    run_until(orchestrator, lambda: placement(orchestrator, "tiny").get("state") == "ready")
    pids = [orchestrator.backend.pid(w) for w in orchestrator.workers]
    orchestrator.shutdown()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_an_idle_model_is_evicted_when_the_next_one_needs_its_memory(make_orchestrator, tiny_model_dir):
    # Each estimate fits the budget alone; the first one's measured memory plus the second's estimate does not.
    orchestrator, recorder = make_orchestrator(budget_mb=1500, want_ttl_s=0.5, keep_alive_s=600)
    first = ModelSpec(slug="first", source=str(tiny_model_dir), memory_mb=1000)
    second = ModelSpec(slug="second", source=str(tiny_model_dir), memory_mb=1000)
    ensure(orchestrator, first)
    run_until(orchestrator, lambda: placement(orchestrator, "first").get("state") == "ready")
    (first_worker,) = orchestrator.workers
    measured = float(orchestrator.redis.hget(orchestrator.keys.worker(first_worker), "memory_mb"))
    # Resident memory of a worker process with torch (~800 MB), plus its KV reservation: under the
    # budget (so it is not shed), over budget with the second one's estimate (so it is evicted for it).
    assert 500 < measured < 1500

    def second_ready():
        ensure(orchestrator, second)
        return placement(orchestrator, "second").get("state") == "ready"

    run_until(orchestrator, second_ready)
    states = [(slug, state) for slug, state, _ in recorder.transitions]
    # The first worker was gone before the second one started: never both in memory.
    assert states.index(("first", "stopped")) < states.index(("second", "starting"))
    assert ("first", "stopping", "evicted to make room for second") in recorder.transitions


def test_a_model_waiting_for_memory_sees_its_place_in_line(make_orchestrator, tiny_model_dir):
    orchestrator, _ = make_orchestrator(budget_mb=1500, want_ttl_s=60)
    busy = ModelSpec(slug="busy", source=str(tiny_model_dir), memory_mb=1000)
    ensure(orchestrator, busy)  # wanted for 60 s: not evictable meanwhile
    run_until(orchestrator, lambda: placement(orchestrator, "busy").get("state") == "ready")
    ensure(orchestrator, ModelSpec(slug="waiting", source=str(tiny_model_dir), memory_mb=1000))
    orchestrator.tick()
    # Never loaded yet: its expected cold start is the default until one is measured.
    assert orch.load_progress(orchestrator.redis, orchestrator.keys, "waiting") == (
        "waiting for memory (1st in line, about 30 s)", 0.0)
    assert "waiting" not in {info["slug"] for info in orchestrator.workers.values()}


def test_a_model_that_can_never_fit_is_refused_with_the_reason(make_orchestrator, tiny_model_dir):
    orchestrator, _ = make_orchestrator(budget_mb=500)
    spec = ModelSpec(slug="huge", source=str(tiny_model_dir), memory_mb=4000)
    since = time.time() - 1
    ensure(orchestrator, spec)
    orchestrator.tick()
    with pytest.raises(orch.WorkerUnavailable, match="needs about 4000 MB; the largest node has 500 MB"):
        orch.ready_worker(orchestrator.redis, orchestrator.keys, spec, since)


def test_a_restarted_orchestrator_stops_the_workers_it_finds_then_serves_with_one(make_orchestrator, tiny_model_dir):
    spec = ModelSpec(slug="tiny", source=str(tiny_model_dir))
    previous, _ = make_orchestrator(want_ttl_s=60)
    ensure(previous, spec)
    run_until(previous, lambda: placement(previous, "tiny").get("state") == "ready")
    (orphan,) = previous.workers
    orphan_pid = previous.backend.pid(orphan)

    restarted, _ = make_orchestrator(want_ttl_s=60)  # same Redis prefix: what a restart sees
    restarted.recover()
    assert not _alive_worker(orphan_pid)
    assert orch.worker_failure(restarted.redis, restarted.keys, orphan) == "stopped: the orchestrator restarted"
    assert placement(restarted, "tiny") == {}
    ensure(restarted, spec)
    run_until(restarted, lambda: placement(restarted, "tiny").get("state") == "ready")
    assert len(restarted.workers) == 1 and placement(restarted, "tiny")["worker_id"] != orphan


def _alive_worker(pid: int) -> bool:
    from orchestration.backends.local import _is_worker

    return _is_worker(pid)


def lease_state(orchestrator, request_id):
    raw = orchestrator.redis.hgetall(orchestrator.keys.lease(request_id))
    return {k.decode(): v.decode() for k, v in raw.items()}


def test_two_battles_sharing_a_model_under_a_two_model_budget_both_get_served(make_orchestrator, tiny_model_dir):
    # A tiny worker's resident memory is ~800 MB (torch's libraries), under the 1000 MB estimate: 2 fit, 3 do not.
    orchestrator, recorder = make_orchestrator(budget_mb=2100, want_ttl_s=0.5)
    x, y, z = (ModelSpec(slug=s, source=str(tiny_model_dir), memory_mb=1000) for s in ("x", "y", "z"))
    redis_client, keys = orchestrator.redis, orchestrator.keys

    def granted(request_id, specs):
        orch.request_lease(redis_client, keys, request_id, specs)  # holders renew while they wait or play
        return lease_state(orchestrator, request_id).get("state") == "granted"

    run_until(orchestrator, lambda: granted("battle-1", [x, y]))
    first = json.loads(lease_state(orchestrator, "battle-1")["workers"])
    # The second battle needs z too: no room while battle 1 holds x and y; it waits its turn, in line.
    orch.request_lease(redis_client, keys, "battle-2", [y, z])
    for _ in range(10):
        orch.request_lease(redis_client, keys, "battle-1", [x, y])
        orchestrator.tick()
    assert lease_state(orchestrator, "battle-2")["state"] == "waiting"
    assert orch.lease_progress(redis_client, keys, "battle-2", [y, z])[0].startswith(
        "waiting for memory (1st in line, about ")

    orch.release_lease(redis_client, keys, "battle-1")
    run_until(orchestrator, lambda: granted("battle-2", [y, z]))
    second = json.loads(lease_state(orchestrator, "battle-2")["workers"])
    assert second["y"] == first["y"]  # the shared model stayed loaded
    assert ("x", "stopping", "evicted to make room for z") in recorder.transitions
    alive = [info["slug"] for info in orchestrator.workers.values() if info["state"] in ("starting", "ready")]
    assert sorted(alive) == ["y", "z"]


def test_acquire_returns_the_granted_workers_or_raises_the_refusal(make_orchestrator, tiny_model_dir):
    import threading

    orchestrator, _ = make_orchestrator(budget_mb=2100, want_ttl_s=0.5)
    fits = [ModelSpec(slug=s, source=str(tiny_model_dir), memory_mb=1000) for s in ("p", "q")]
    too_big = [ModelSpec(slug="huge", source=str(tiny_model_dir), memory_mb=5000)]
    outcomes = {}

    def ask(name, specs):
        try:
            outcomes[name] = orch.acquire(orchestrator.redis, orchestrator.keys, name, specs, timeout_s=60)
        except orch.WorkerUnavailable as exc:
            outcomes[name] = exc

    threads = [threading.Thread(target=ask, args=args) for args in (("battle", fits), ("huge", too_big))]
    for thread in threads:
        thread.start()
    run_until(orchestrator, lambda: len(outcomes) == 2)
    assert set(outcomes["battle"]) == {"p", "q"}
    assert {info["slug"] for info in orchestrator.workers.values()} == {"p", "q"}
    assert "needs about 5000 MB" in str(outcomes["huge"])
    orch.release_lease(orchestrator.redis, orchestrator.keys, "battle")
