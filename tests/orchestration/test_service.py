"""The orchestrator service with the local backend: real worker processes (serving a
tiny random-weight model), real Redis, real time with short timeouts. Every request is
a lease, as the application makes them: a single generation leases one model."""

import os
import signal

import pytest

from inference import protocol
from inference.protocol import ModelSpec
from orchestration import client as orch
from orchestration.backends.local import _is_worker

from .helpers import (
    HELD,
    Acquiring,
    acquired,
    generate,
    granted,
    lease,
    lease_state,
    placement,
    release,
    run_until,
)

pytestmark = pytest.mark.timeout(120)


def test_a_leased_model_is_started_then_unloaded_a_keep_alive_after_its_last_use(make_orchestrator, tiny_model_dir):
    orchestrator, recorder = make_orchestrator(keep_alive_s=3.0)
    spec = ModelSpec(slug="tiny", source=str(tiny_model_dir))
    (worker_id,) = acquired(orchestrator, "generation:1", spec).values()
    assert list(orchestrator.workers) == [worker_id]
    pid = orchestrator.backend.pid(worker_id)
    assert generate(orchestrator, worker_id)[-1]["type"] == protocol.DONE
    release(orchestrator, "generation:1")
    for _ in range(5):  # released, just used: kept for the next generation
        orchestrator.tick()
    assert orchestrator.workers[worker_id]["state"] == "ready"
    run_until(orchestrator, lambda: not orchestrator.workers)  # idle past the keep-alive: stopped
    assert [state for _slug, state, _ in recorder.transitions] == ["starting", "ready", "stopping", "stopped"]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_model_that_fails_to_load_fails_its_acquire_with_the_reason(make_orchestrator, tmp_path):
    orchestrator, _ = make_orchestrator()
    (tmp_path / "empty").mkdir()
    broken = ModelSpec(slug="broken", source=str(tmp_path / "empty"))
    acquiring = Acquiring(orchestrator, "generation:1", [broken]).started()
    run_until(orchestrator, lambda: acquiring.over)
    assert "load" in str(acquiring.error).lower()
    assert placement(orchestrator, "broken")["state"] == "failed"
    orchestrator.tick()
    assert "generation:1" not in orchestrator.leases  # given up: no retry for nobody


def test_a_worker_whose_install_is_broken_fails_with_the_import_error(make_orchestrator, tiny_model_dir, tmp_path):
    shadow = tmp_path / "shadow" / "transformers"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('transformers is broken in this environment')\n")
    orchestrator, _ = make_orchestrator(env={"PYTHONPATH": str(shadow.parent)}, **HELD)
    lease(orchestrator, "generation:1", ModelSpec(slug="tiny", source=str(tiny_model_dir)))
    run_until(orchestrator, lambda: placement(orchestrator, "tiny").get("state") == "failed")
    assert "transformers is broken in this environment" in placement(orchestrator, "tiny")["last_error"]


def test_a_worker_killed_while_loading_fails_visibly_then_the_retry_serves(make_orchestrator, tiny_model_dir):
    """What the kernel's out-of-memory killer does to a worker: SIGKILL in the middle of its load."""
    orchestrator, recorder = make_orchestrator(**HELD)
    lease(orchestrator, "generation:1", ModelSpec(slug="tiny", source=str(tiny_model_dir)))
    run_until(orchestrator, lambda: placement(orchestrator, "tiny").get("state") == "starting")
    (loading,) = orchestrator.workers
    os.kill(orchestrator.backend.pid(loading), signal.SIGKILL)
    run_until(orchestrator, lambda: placement(orchestrator, "tiny").get("last_error"))
    assert "killed by signal 9" in placement(orchestrator, "tiny")["last_error"]
    run_until(orchestrator, lambda: granted(orchestrator, "generation:1"))  # after the back-off
    assert [state for slug, state, _ in recorder.transitions][:2] == ["starting", "failed"]


def test_a_hung_worker_is_killed_and_replaced(make_orchestrator, tiny_model_dir):
    orchestrator, recorder = make_orchestrator(heartbeat_grace_s=1.0, **HELD)
    (hung,) = acquired(orchestrator, "battle:1", ModelSpec(slug="tiny", source=str(tiny_model_dir))).values()
    os.kill(orchestrator.backend.pid(hung), signal.SIGSTOP)  # alive, but silent
    # The lease waits again once its worker has gone, and is granted the replacement.
    run_until(orchestrator, lambda: (granted(orchestrator, "battle:1") or {}).get("tiny") not in (None, hung))
    assert any(state == "failed" and "heartbeat" in reason for _slug, state, reason in recorder.transitions)
    assert placement(orchestrator, "tiny")["worker_id"] != hung


def test_shutdown_stops_every_worker(make_orchestrator, tiny_model_dir):
    orchestrator, _ = make_orchestrator()
    acquired(orchestrator, "generation:1", ModelSpec(slug="tiny", source=str(tiny_model_dir)))
    pids = [orchestrator.backend.pid(w) for w in orchestrator.workers]
    orchestrator.shutdown()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_an_idle_model_is_evicted_when_the_next_one_needs_its_memory(make_orchestrator, tiny_model_dir):
    # Each estimate fits the budget alone; the first one's measured memory plus the second's estimate does not.
    orchestrator, recorder = make_orchestrator(budget_mb=1500, keep_alive_s=600)
    first = ModelSpec(slug="first", source=str(tiny_model_dir), memory_mb=1000)
    second = ModelSpec(slug="second", source=str(tiny_model_dir), memory_mb=1000)
    (first_worker,) = acquired(orchestrator, "generation:1", first).values()
    measured = float(orchestrator.redis.hget(orchestrator.keys.worker(first_worker), "memory_mb"))
    # Resident memory of a worker process with torch (~800 MB), plus its KV reservation: under the
    # budget (so it is not shed), over budget with the second one's estimate (so it is evicted for it).
    assert 500 < measured < 1500
    release(orchestrator, "generation:1")
    acquired(orchestrator, "generation:2", second)
    states = [(slug, state) for slug, state, _ in recorder.transitions]
    # The first worker was gone before the second one started: never both in memory.
    assert states.index(("first", "stopped")) < states.index(("second", "starting"))
    assert ("first", "stopping", "evicted to make room for second") in recorder.transitions


def test_generations_waiting_for_the_same_model_expect_the_same_wait(make_orchestrator, tiny_model_dir):
    orchestrator, _ = make_orchestrator(budget_mb=1500, wait_ttl_s=3.0)
    busy, waiting, other = (ModelSpec(slug=s, source=str(tiny_model_dir), memory_mb=1000)
                            for s in ("busy", "waiting", "other"))
    acquired(orchestrator, "generation:1", busy)  # held: not evictable meanwhile
    for request_id, spec in (("generation:2", waiting), ("generation:3", waiting), ("generation:4", other)):
        lease(orchestrator, request_id, spec)
    orchestrator.tick()

    def progress(request_id, spec):
        return orch.lease_progress(orchestrator.redis, orchestrator.keys, request_id, [spec])

    # Never loaded yet: each model's expected cold start is the default until one is measured.
    assert progress("generation:2", waiting) == ("waiting for memory (about 30 s)", 0.0)
    assert progress("generation:3", waiting) == ("waiting for memory (about 30 s)", 0.0)
    assert progress("generation:4", other) == ("waiting for memory (about 60 s)", 0.0)
    assert {info["slug"] for info in orchestrator.workers.values()} == {"busy"}

    # generation:2's task died (no renewals): after the wait TTL it gives up its wait; the rest keep theirs.
    def lapsed():
        for request_id, spec in (("generation:3", waiting), ("generation:4", other)):
            lease(orchestrator, request_id, spec)
        return "generation:2" not in orchestrator.leases

    run_until(orchestrator, lapsed, timeout=10)
    assert lease_state(orchestrator, "generation:2") == {}
    assert progress("generation:3", waiting)[0] == "waiting for memory (about 30 s)"
    assert "generation:1" in orchestrator.leases  # granted: its own, longer TTL


def test_a_model_that_can_never_fit_is_refused_with_the_reason(make_orchestrator, tiny_model_dir):
    orchestrator, _ = make_orchestrator(budget_mb=500)
    acquiring = Acquiring(orchestrator, "generation:1", [ModelSpec(slug="huge", source=str(tiny_model_dir),
                                                                   memory_mb=4000)]).started()
    run_until(orchestrator, lambda: acquiring.over, timeout=10)
    assert str(acquiring.error) == "The model huge needs about 4000 MB; the largest node has 500 MB."
    assert not orchestrator.workers and not orchestrator.leases


def test_a_restarted_orchestrator_stops_the_workers_it_finds_then_serves_with_one(make_orchestrator, tiny_model_dir):
    spec = ModelSpec(slug="tiny", source=str(tiny_model_dir))
    previous, _ = make_orchestrator(**HELD)
    (orphan,) = acquired(previous, "generation:1", spec).values()
    orphan_pid = previous.backend.pid(orphan)

    restarted, _ = make_orchestrator(**HELD)  # same Redis prefix: what a restart sees
    restarted.recover()
    assert not _is_worker(orphan_pid)
    assert orch.worker_failure(restarted.redis, restarted.keys, orphan) == "stopped: the orchestrator restarted"
    assert placement(restarted, "tiny") == {}
    assert acquired(restarted, "generation:2", spec)["tiny"] != orphan
    assert len(restarted.workers) == 1


def test_two_battles_sharing_a_model_under_a_two_model_budget_both_get_served(make_orchestrator, tiny_model_dir):
    # A tiny worker's resident memory is ~800 MB (torch's libraries), under the 1000 MB estimate: 2 fit, 3 do not.
    orchestrator, recorder = make_orchestrator(budget_mb=2100)
    x, y, z = (ModelSpec(slug=s, source=str(tiny_model_dir), memory_mb=1000) for s in ("x", "y", "z"))

    first = acquired(orchestrator, "battle-1", x, y)
    # The second battle needs z too: no room while battle 1 holds x and y; it waits its turn, in line.
    lease(orchestrator, "battle-2", y, z)
    for _ in range(10):
        lease(orchestrator, "battle-1", x, y)
        orchestrator.tick()
    assert lease_state(orchestrator, "battle-2")["state"] == "waiting"
    assert orch.lease_progress(orchestrator.redis, orchestrator.keys, "battle-2", [y, z])[0].startswith(
        "waiting for memory (about ")

    release(orchestrator, "battle-1")
    second = acquired(orchestrator, "battle-2", y, z)
    assert second["y"] == first["y"]  # the shared model stayed loaded
    assert ("x", "stopping", "evicted to make room for z") in recorder.transitions
    alive = [info["slug"] for info in orchestrator.workers.values() if info["state"] in ("starting", "ready")]
    assert sorted(alive) == ["y", "z"]


def test_acquire_returns_the_granted_workers_or_raises_the_refusal(make_orchestrator, tiny_model_dir):
    orchestrator, _ = make_orchestrator(budget_mb=2100)
    fits = [ModelSpec(slug=s, source=str(tiny_model_dir), memory_mb=1000) for s in ("p", "q")]
    too_big = [ModelSpec(slug="huge", source=str(tiny_model_dir), memory_mb=5000)]
    battle = Acquiring(orchestrator, "battle", fits).started()
    huge = Acquiring(orchestrator, "huge", too_big).started()
    run_until(orchestrator, lambda: battle.over and huge.over)
    assert set(battle.workers) == {"p", "q"}
    assert {info["slug"] for info in orchestrator.workers.values()} == {"p", "q"}
    assert "needs about 5000 MB" in str(huge.error)
    release(orchestrator, "battle")


def test_a_pair_granted_together_says_which_side_loaded_and_which_was_warm(make_orchestrator, tiny_model_dir):
    """A battle leases its two models together and is granted when the slower is ready: each side's own
    load is its own model's (the warm one ~0), not the pair's wait on both sides (issue 35)."""
    orchestrator, _ = make_orchestrator(**HELD)
    warm, cold = (ModelSpec(slug=slug, source=str(tiny_model_dir)) for slug in ("tiny-warm", "tiny-cold"))
    acquired(orchestrator, "generation:1", warm)
    release(orchestrator, "generation:1")
    assert orch.ready_after(orchestrator.redis, orchestrator.keys, "battle:1") == {}  # nothing granted yet
    acquired(orchestrator, "battle:1", warm, cold)
    ready = orch.ready_after(orchestrator.redis, orchestrator.keys, "battle:1")
    assert ready["tiny-warm"] == 0.0
    assert ready["tiny-cold"] >= 0.5  # a real worker process loading a model: never instant
