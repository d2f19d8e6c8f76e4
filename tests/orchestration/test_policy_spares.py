"""Spare workers in the pure policy (processes started ahead with an engine's libraries imported),
driven with a fake clock (plain numbers): where they start, who takes them over, what they give up."""

from orchestration import policy
from orchestration.policy import Cluster, Config, DropSpare, Node, Request, Spare, Spawn, StartSpare, Stop, WorkerView

CFG = Config(keep_alive_s=600, start_timeout_s=300, heartbeat_grace_s=5)
SIZES = {"transformers": 800.0, "llamacpp": 50.0}
ENGINES = {"tf": "transformers", "tf2": "transformers", "cpp": "llamacpp"}
ESTIMATES = {"tf": 900.0, "tf2": 900.0, "cpp": 400.0}


def worker(**kw) -> WorkerView:
    base = {"worker_id": "w1", "slug": "tf", "state": "ready", "started_at": 0.0, "last_used": 0.0,
            "last_heartbeat": 10.0}
    return WorkerView(**{**base, **kw})


def plan(*, workers=(), wanted=(), spares=(), budget=4000.0, sizes=None, now=10.0):
    requests = tuple(Request(f"r-{slug}", (slug,), arrived_at=float(i)) for i, slug in enumerate(wanted))
    cluster = Cluster(workers=tuple(workers), requests=requests, nodes=(Node(budget_mb=budget),),
                      estimates_mb=ESTIMATES, spares=tuple(spares), engines=ENGINES,
                      spare_sizes=SIZES if sizes is None else sizes)
    return [a for a in policy.plan(cluster, now, CFG) if not isinstance(a, policy.Grant)]


def spare(engine: str) -> Spare:
    return Spare(engine, SIZES[engine])


def test_a_quiet_node_with_room_starts_a_spare_of_each_engine_smallest_first():
    assert plan() == [StartSpare("llamacpp", "local"), StartSpare("transformers", "local")]
    assert plan(spares=[spare("llamacpp"), spare("transformers")]) == []


def test_no_spare_without_engines_to_keep_or_without_room():
    assert plan(sizes={}) == []
    assert plan(budget=700.0) == [StartSpare("llamacpp", "local")]  # 800 MB of transformers spare does not fit
    # What the workers hold counts: 3000 of 4000 MB leave room for the small spare only.
    idle = [worker(worker_id=f"w{i}", memory_mb=1000.0) for i in range(3)]
    assert plan(workers=idle, budget=3000.0 + 700.0) == [StartSpare("llamacpp", "local")]


def test_no_spare_starts_beside_a_loading_or_serving_worker_or_a_waiting_request():
    assert plan(workers=[worker(state="starting")]) == []
    assert plan(workers=[worker(in_flight=1)]) == []
    assert plan(workers=[worker(queued=1)]) == []
    assert plan(workers=[worker()]) == [StartSpare("llamacpp", "local"), StartSpare("transformers", "local")]
    # A request that waits (its model starting this tick) comes first: no spare in the same tick.
    assert plan(wanted=["tf"]) == [Spawn("tf")]


def test_a_cold_variant_takes_its_engines_spare_and_its_memory():
    # 900 MB needed, 100 free, the transformers spare's 800 become the worker's: it starts at once.
    actions = plan(wanted=["tf"], spares=[spare("transformers")], budget=1700.0)
    assert actions == [Spawn("tf")]


def test_another_engines_spare_is_dropped_before_any_warm_worker_is_evicted():
    idle = worker(worker_id="warm", slug="tf2", last_used=0.0)
    actions = plan(workers=[idle], wanted=["cpp"], spares=[spare("transformers")], budget=900.0 + 800.0 + 100.0)
    assert actions == [DropSpare("transformers", "local", "its memory is needed for cpp"), Spawn("cpp")]


def test_spares_are_kept_when_dropping_them_would_not_make_room():
    # 900 MB needed, 100 free and a 50 MB spare, the rest held by a busy worker: the spare stays.
    busy = worker(worker_id="busy", slug="tf2", in_flight=1)
    assert plan(workers=[busy], wanted=["tf"], spares=[spare("llamacpp")], budget=900.0 + 50.0 + 100.0) == []


def test_a_node_over_its_budget_drops_its_spares_before_its_workers():
    measured = worker(memory_mb=1500.0)  # estimated 900, measured 1500: 1500 + 800 > 2000
    actions = plan(workers=[measured], spares=[spare("transformers")], budget=2000.0, sizes={"transformers": 800.0})
    assert actions == [DropSpare("transformers", "local", "the node is over its memory budget")]
    assert not any(isinstance(a, Stop) for a in actions)
