"""The orchestrator's pure policy, driven with a fake clock (plain numbers)."""

from orchestration import policy
from orchestration.policy import Cluster, Config, Fail, Failures, Spawn, Stop, WorkerView

CFG = Config(keep_alive_s=60, start_timeout_s=30, heartbeat_grace_s=5)


def worker(**kw) -> WorkerView:
    base = {"worker_id": "w1", "slug": "m", "state": "ready", "started_at": 0.0, "last_used": 0.0,
            "last_heartbeat": 0.0}
    return WorkerView(**{**base, **kw})


def plan(workers, wanted, now, config, failures=None):
    """One single-model request per wanted variant, on one node without a memory limit."""
    requests = tuple(policy.Request(f"r-{slug}", (slug,), arrived_at=0.0) for slug in sorted(wanted))
    cluster = Cluster(workers=tuple(workers), requests=requests, failures=failures or {})
    return [a for a in policy.plan(cluster, now, config) if not isinstance(a, policy.Grant)]


def test_a_wanted_model_without_a_worker_is_spawned():
    assert plan([], {"m"}, now=0.0, config=CFG) == [Spawn("m")]


def test_a_starting_or_ready_worker_serves_its_model():
    assert plan([worker(state="starting")], {"m"}, now=1.0, config=CFG) == []
    assert plan([worker(last_heartbeat=1.0)], {"m"}, now=2.0, config=CFG) == []


def test_a_dead_process_fails_and_is_replaced_on_a_later_tick():
    actions = plan([worker(exit_code=-9, last_heartbeat=9.0)], {"m"}, now=10.0, config=CFG)
    assert actions == [Fail("w1", "The model worker was killed by signal 9.")]
    assert plan([], {"m"}, now=10.1, config=CFG, failures={"m": Failures(1, 10.0)}) == []
    assert plan([], {"m"}, now=12.0, config=CFG, failures={"m": Failures(1, 10.0)}) == [Spawn("m")]


def test_a_variant_that_keeps_failing_backs_off_exponentially_up_to_a_cap():
    assert [CFG.retry_delay(n) for n in range(8)] == [0, 2, 4, 8, 16, 32, 60, 60]
    failed = {"m": Failures(3, 100.0)}
    assert plan([], {"m"}, now=107.9, config=CFG, failures=failed) == []
    assert plan([], {"m"}, now=108.0, config=CFG, failures=failed) == [Spawn("m")]


def test_the_workers_own_error_is_the_failure_reason():
    actions = plan([worker(state="starting", exit_code=3, error="Model failed to load: no such file")], set(), 1.0, CFG)
    assert actions == [Fail("w1", "Model failed to load: no such file")]


def test_a_worker_that_takes_too_long_to_load_fails():
    assert plan([worker(state="starting", last_heartbeat=None)], set(), now=29.0, config=CFG) == []
    actions = plan([worker(state="starting", last_heartbeat=None)], set(), now=31.0, config=CFG)
    assert len(actions) == 1 and isinstance(actions[0], Fail) and "30 s" in actions[0].reason


def test_a_load_that_reports_progress_may_outlast_the_timeout_but_not_stall():
    quantising = {"state": "starting", "last_heartbeat": None}
    # Still loading after 100 s, but it reported progress 20 s ago: keep waiting.
    assert plan([worker(**quantising, progress_at=80.0)], set(), now=100.0, config=CFG) == []
    # The last report is older than the timeout: the load has stalled.
    actions = plan([worker(**quantising, progress_at=60.0)], set(), now=100.0, config=CFG)
    assert actions == [Fail("w1", "The model's loading made no progress for 30 s.")]


def test_a_ready_worker_that_stops_heartbeating_has_hung():
    assert plan([worker(last_heartbeat=10.0)], set(), now=14.0, config=CFG) == []
    actions = plan([worker(last_heartbeat=10.0)], set(), now=16.0, config=CFG)
    assert isinstance(actions[0], Fail) and "heartbeat" in actions[0].reason


def test_an_idle_worker_is_stopped_after_the_keep_alive():
    idle = worker(last_used=100.0, last_heartbeat=159.0)
    assert plan([idle], set(), now=159.0, config=CFG) == []
    assert plan([worker(last_used=100.0, last_heartbeat=161.0)], set(), now=161.0, config=CFG) == [
        Stop("w1", "idle for 61 s")
    ]


def test_a_busy_or_wanted_worker_is_never_stopped_for_idleness():
    busy = worker(last_used=0.0, last_heartbeat=500.0, in_flight=1)
    queued = worker(last_used=0.0, last_heartbeat=500.0, queued=2)
    assert plan([busy], set(), now=500.0, config=CFG) == []
    assert plan([queued], set(), now=500.0, config=CFG) == []
    assert plan([worker(last_used=0.0, last_heartbeat=500.0)], {"m"}, now=500.0, config=CFG) == []


def test_stopped_and_failed_workers_are_ignored():
    assert plan([worker(state="stopped"), worker(worker_id="w2", state="failed")], {"m"}, 1.0, CFG) == [Spawn("m")]
