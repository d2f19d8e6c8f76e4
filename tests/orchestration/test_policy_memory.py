"""The policy's memory, lease and eviction rules, with a fake clock (plain numbers)."""

from orchestration.policy import (
    Cluster,
    Config,
    Fail,
    Failures,
    Grant,
    Node,
    Refuse,
    Request,
    Spawn,
    StartOrder,
    Stop,
    Unplaceable,
    WorkerView,
    plan,
)

CFG = Config(keep_alive_s=600, start_timeout_s=300, heartbeat_grace_s=30)
SIZES = {"a": 400.0, "b": 400.0, "c": 400.0, "big": 700.0}
ONE_NODE = (Node("n1", budget_mb=1000),)


def ready(worker_id, slug, last_used=0.0, node_id="n1", **kw) -> WorkerView:
    return WorkerView(worker_id, slug, "ready", started_at=0.0, last_used=last_used, last_heartbeat=100.0,
                      node_id=node_id, **kw)


def ask(request_id, *slugs, at=0.0, prewarm=False) -> Request:
    return Request(request_id, slugs, arrived_at=at, prewarm=prewarm)


def decide(workers=(), requests=(), nodes=ONE_NODE, config=CFG, **kw):
    cluster = Cluster(workers=tuple(workers), requests=tuple(requests), nodes=nodes, estimates_mb=SIZES, **kw)
    return plan(cluster, now=100.0, config=config)


def test_a_battle_gets_both_models_started_at_once_then_granted():
    assert decide(requests=[ask("battle", "a", "b")]) == [Spawn("a", "n1"), Spawn("b", "n1")]
    granted = decide([ready("wa", "a"), ready("wb", "b")], [ask("battle", "a", "b")])
    assert granted == [Grant("battle", (("a", "wa"), ("b", "wb")))]


def test_a_battle_that_does_not_fit_yet_starts_nothing():
    # A busy worker holds 400 of 1000 MB: starting one of the two would only hold memory the other needs.
    assert decide([ready("wc", "c", in_flight=1)], [ask("battle", "a", "b")]) == []


def test_models_that_can_never_fit_are_refused_with_the_reason():
    (refusal,) = decide(requests=[ask("huge", "big")], nodes=(Node("n1", budget_mb=500),))
    assert isinstance(refusal, Refuse) and "needs about 700 MB" in refusal.reason
    (refusal,) = decide(requests=[ask("battle", "a", "big")])
    assert isinstance(refusal, Refuse) and "1100 MB together" in refusal.reason


def test_idle_workers_are_evicted_least_recently_used_first():
    workers = [ready("wa", "a", last_used=50.0), ready("wb", "b", last_used=10.0)]
    assert decide(workers, [ask("r", "c")]) == [Stop("wb", "evicted to make room for c")]
    # The evicted worker holds its memory until it has exited: c starts after that, nothing else is evicted.
    stopping = WorkerView("wb", "b", "stopping", started_at=0.0, last_used=10.0, node_id="n1")
    assert decide([workers[0], stopping], [ask("r", "c")]) == []
    assert decide([workers[0]], [ask("r", "c")]) == [Spawn("c", "n1")]


def test_busy_leased_loading_and_pinned_workers_are_never_evicted():
    for blocker in (
        ready("wb", "b", in_flight=1),
        ready("wb", "b", queued=1),
        ready("wb", "b", leases=1),
        ready("wb", "b", pinned=True),
        WorkerView("wb", "b", "starting", started_at=90.0, last_used=90.0, node_id="n1"),
    ):
        busy_a = ready("wa", "a", in_flight=1)
        assert decide([busy_a, blocker], [ask("r", "c")]) == [], blocker


def test_a_stopping_worker_still_holds_its_memory():
    stopping = WorkerView("wa", "a", "stopping", started_at=0.0, last_used=0.0, node_id="n1")
    busy = ready("wb", "b", in_flight=1)
    assert decide([stopping, busy], [ask("r", "c")]) == []


def test_the_measured_memory_replaces_the_estimate():
    small = ready("wa", "a", memory_mb=100.0, in_flight=1)
    assert decide([small], [ask("r", "big")]) == [Spawn("big", "n1")]  # 100 + 700 fits; 400 + 700 would not


def test_requests_are_served_in_arrival_order_and_a_blocked_one_holds_later_ones_back():
    busy = ready("wa", "a", in_flight=1)
    first = ask("first", "big", at=1.0)  # needs the busy worker's memory: waits
    second = ask("second", "b", at=2.0)  # would fit now, but must not overtake
    assert decide([busy], [second, first]) == []
    # Once the busy worker is idle, the first is served (evicting it), the second waits its turn.
    assert decide([ready("wa", "a")], [second, first]) == [Stop("wa", "evicted to make room for big")]
    assert decide([], [second, first]) == [Spawn("big", "n1")]


def test_a_request_served_by_ready_workers_is_granted_even_behind_a_blocked_one():
    workers = [ready("wa", "a", in_flight=1), ready("wb", "b", memory_mb=100.0, in_flight=1)]
    actions = decide(workers, [ask("blocked", "big", at=1.0), ask("chat", "b", at=2.0)])
    assert actions == [Grant("chat", (("b", "wb"),))]


def test_two_battles_wanting_each_others_models_do_not_deadlock():
    nodes = (Node("n1", budget_mb=800),)
    requests = [ask("ab", "a", "b", at=1.0), ask("bc", "b", "c", at=2.0)]
    # First tick: the earlier battle gets both models; the later one waits whole.
    assert decide([], requests, nodes=nodes) == [Spawn("a", "n1"), Spawn("b", "n1")]
    # Its battle over (no lease, idle), the later battle evicts what it does not share.
    workers = [ready("wa", "a", last_used=90.0), ready("wb", "b", last_used=90.0)]
    assert decide(workers, requests[1:], nodes=nodes) == [Stop("wa", "evicted to make room for c")]
    assert decide(workers[1:], requests[1:], nodes=nodes) == [Spawn("c", "n1")]


def test_prewarm_uses_free_memory_only_and_never_evicts():
    idle = ready("wa", "a")
    assert decide([idle], [ask("next", "b", prewarm=True)]) == [Spawn("b", "n1")]
    assert decide([idle, ready("wb", "b")], [ask("next", "c", prewarm=True)]) == []


def test_prewarm_never_delays_a_real_request():
    actions = decide([], [ask("next", "big", at=1.0, prewarm=True), ask("now", "a", "b", at=2.0)])
    assert actions == [Spawn("a", "n1"), Spawn("b", "n1")]


def test_admitted_requests_are_never_refused_as_busy_however_many_wait():
    # The fair line (arena/generations/admission.py) alone decides how much waits: forty requests
    # waiting for memory all wait their turn; the first is started, the rest wait behind it.
    busy = ready("wa", "a", in_flight=1, memory_mb=1000.0)
    waiting = [ask(f"r{i}", "bc"[i % 2], at=float(i)) for i in range(40)]
    actions = decide([busy], waiting)
    assert not any(isinstance(action, Refuse) for action in actions)


def test_requests_for_models_already_starting_start_with_them():
    order = StartOrder()
    assert [order.join(slugs) for slugs in [("b",), ("b",), ("c", "b"), ("c",), ("b", "c"), ("d",)]] == [
        (1, True), (1, False), (2, True), (2, False), (2, False), (3, True)]


def test_the_loaded_worker_cap_evicts_the_least_recently_used():
    config = Config(max_workers=2)
    nodes = (Node("n1", budget_mb=10_000),)
    workers = [ready("wa", "a", last_used=5.0), ready("wb", "b", last_used=1.0)]
    assert decide(workers, [ask("r", "c")], nodes=nodes, config=config) == [
        Stop("wb", "evicted: at most 2 loaded models"), Spawn("c", "n1")]


def test_a_variant_goes_to_the_node_with_room_best_fit():
    nodes = (Node("small", budget_mb=500), Node("large", budget_mb=2000))
    assert decide([], [ask("r", "a")], nodes=nodes) == [Spawn("a", "small")]
    assert decide([], [ask("r", "big")], nodes=nodes) == [Spawn("big", "large")]


def test_workers_on_a_lost_node_fail_and_nothing_is_placed_there():
    nodes = (Node("n1", budget_mb=1000, alive=False, name="10.0.0.7:6380"), Node("n2", budget_mb=1000))
    actions = decide([ready("wa", "a", node_id="n1")], [ask("r", "b")], nodes=nodes)
    assert actions[0] == Fail("wa", "The machine serving this model was lost (node 10.0.0.7:6380); "
                                    "the model worker there is gone.")
    assert actions[1:] == [Spawn("b", "n2")]


def test_workers_on_a_node_no_longer_listed_fail_too():
    actions = decide([ready("wa", "a", node_id="gone")], [ask("r", "a")], nodes=ONE_NODE)
    assert actions == [Fail("wa", "The machine serving this model was lost (node gone); "
                                  "the model worker there is gone.")]


def test_a_worker_that_exited_with_its_own_reason_is_failed_with_it_even_on_a_lost_node():
    nodes = (Node("n1", budget_mb=1000, alive=False),)
    told = WorkerView("wa", "a", "ready", 0.0, 0.0, exit_code=255, node_id="n1",
                      error="The machine serving this model was lost (Ray: node n1 died: received SIGTERM).")
    assert decide([told], nodes=nodes) == [Fail("wa", told.error)]


def test_without_a_live_node_every_request_is_refused_with_the_reason():
    nodes = (Node("n1", budget_mb=1000, alive=False),)
    assert decide([], [ask("r", "a")], nodes=nodes) == [
        Refuse("r", "No machine can run models right now: no node is available.")]
    assert decide([], [ask("r", "a")], nodes=()) == [
        Refuse("r", "No machine can run models right now: no node is available.")]


def test_a_failed_variant_waits_out_its_back_off():
    # 4 s of back-off after the second failure in a row
    assert decide([], [ask("r", "a")], failures={"a": Failures(count=2, last_at=97.0)}) == []
    assert decide([], [ask("r", "a")], failures={"a": Failures(count=2, last_at=96.0)}) == [Spawn("a", "n1")]


def test_a_node_over_budget_sheds_idle_workers_until_it_fits():
    # Both measured larger than their estimates: 1300 MB reserved on a 1000 MB node.
    workers = [ready("wa", "a", memory_mb=650.0, last_used=5.0), ready("wb", "b", memory_mb=650.0, last_used=1.0)]
    assert decide(workers) == [Stop("wb", "evicted: the node is over its memory budget")]
    assert decide([workers[0], ready("wb", "b", memory_mb=650.0, in_flight=1)]) == [
        Stop("wa", "evicted: the node is over its memory budget")]
    busy = [ready("wa", "a", memory_mb=650.0, in_flight=1), ready("wb", "b", memory_mb=650.0, leases=1)]
    assert decide(busy) == []  # nothing idle: it waits


# --- GPUs and clusters that grow (the Ray backend) ------------------------------------------------
GPU_NODES = (Node("cpu", budget_mb=4000), Node("gpu", budget_mb=1000, gpus=1.0))


def test_a_variant_asking_for_a_gpu_goes_to_the_node_that_has_one():
    assert decide([], [ask("r", "a")], nodes=GPU_NODES, gpus={"a": 1.0}) == [Spawn("a", "gpu")]
    assert decide([], [ask("r", "a")], nodes=GPU_NODES) == [Spawn("a", "gpu")]  # best fit: the fuller node


def test_gpu_fractions_share_one_gpu_and_a_whole_one_is_held_until_its_worker_exits():
    half = {"a": 0.5, "b": 0.5, "c": 0.5}
    nodes = (Node("gpu", budget_mb=4000, gpus=1.0),)
    assert decide([ready("wa", "a", node_id="gpu", in_flight=1)], [ask("r", "b")], nodes=nodes, gpus=half) == [
        Spawn("b", "gpu")]
    two_busy = [ready("wa", "a", node_id="gpu", in_flight=1), ready("wb", "b", node_id="gpu", in_flight=1)]
    assert decide(two_busy, [ask("r", "c")], nodes=nodes, gpus=half) == []  # memory is there, the GPU is not
    idle = [ready("wa", "a", node_id="gpu", last_used=1.0), ready("wb", "b", node_id="gpu", in_flight=1)]
    assert decide(idle, [ask("r", "c")], nodes=nodes, gpus=half) == [Stop("wa", "evicted to make room for c")]


def test_a_model_needing_a_gpu_no_node_has_is_refused_by_a_fixed_cluster():
    (refusal,) = decide([], [ask("r", "a")], nodes=(Node("n1", budget_mb=4000),), gpus={"a": 1.0})
    assert refusal == Refuse("r", "The model a needs about 400 MB and 1 GPU on one machine; no node has 1 GPU.")
    nodes = (Node("cpu", budget_mb=4000), Node("gpu", budget_mb=300, gpus=1.0))
    (refusal,) = decide([], [ask("r", "a")], nodes=nodes, gpus={"a": 1.0})
    assert refusal == Refuse("r", "The model a needs about 400 MB and 1 GPU on one machine; no node has both.")


def test_an_elastic_cluster_keeps_what_fits_no_node_waiting_with_the_reason_and_serves_the_rest():
    nodes = (Node("n1", budget_mb=500),)
    actions = decide([], [ask("huge", "big"), ask("r", "a")], nodes=nodes, elastic=True)
    assert actions == [Unplaceable("huge", "The model big needs about 700 MB; the largest node has 500 MB."),
                       Spawn("a", "n1")]
    # Pre-warm never asks for a node.
    assert decide([], [ask("p", "big", prewarm=True)], nodes=nodes, elastic=True) == []


def test_requested_reservations_count_what_ray_holds_not_what_the_worker_measured():
    small = [ready("wa", "a", memory_mb=100.0, in_flight=1)]  # asked 400, measured 100: 600 free by measure
    assert decide(small, [ask("r", "big")]) == [Spawn("big", "n1")]
    assert decide(small, [ask("r", "big")], reserve_requested=True) == []


def test_a_battle_moves_its_own_idle_model_off_the_only_gpu_node_to_make_room_there():
    nodes = (Node("gpu", budget_mb=800, gpus=1.0), Node("cpu", budget_mb=800))
    loaded = [ready("wa", "a", node_id="gpu", memory_mb=300.0)]
    actions = decide(loaded, [ask("battle", "a", "big")], nodes=nodes, gpus={"big": 1.0})
    assert actions == [Stop("wa", "evicted to make room for big (it starts again)"), Spawn("a", "cpu")]
    # Once the old worker has exited, the GPU node takes the model that needs it.
    moved = [ready("wa2", "a", node_id="cpu")]
    assert decide(moved, [ask("battle", "a", "big")], nodes=nodes, gpus={"big": 1.0}) == [Spawn("big", "gpu")]


def test_models_no_set_of_nodes_can_hold_at_once_are_refused_together():
    nodes = (Node("gpu", budget_mb=2000, gpus=1.0), Node("cpu", budget_mb=2000))
    (refusal,) = decide([], [ask("battle", "a", "big")], nodes=nodes, gpus={"a": 1.0, "big": 1.0})
    assert refusal == Refuse("battle", "These models need about 1100 MB and 2 GPUs together; "
                                       "no set of nodes can hold them all at once.")
