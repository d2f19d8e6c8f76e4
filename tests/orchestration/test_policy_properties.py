"""Properties of the orchestration policy over random request / release / crash sequences.

A small simulated world carries out the policy's actions tick by tick (a fake clock:
one tick is one second): spawned workers load after two ticks, stopped ones exit
on the next, granted requests hold leases until released. Hypothesis drives it and
checks, after every tick, that:
- no node's reservations exceed its budget, in memory and in GPUs (some variants ask for a
  whole or half a GPU; a world counts either measured memory or, as on Ray, the requested);
- no busy, leased, loading or pinned worker is ever stopped;
- a request is refused only when no node could ever hold it, never for being busy;
- with spare workers (processes started ahead, one per engine per node, that a spawn of their
  engine takes over), their memory counts in those reservations too;
and, once the random events end and every lease is released, that every request
(prewarm ones aside: they only use free memory and lapse when unrenewed) ends granted
or refused: nothing waits forever (no deadlock, no starvation).
"""

from __future__ import annotations

import dataclasses
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestration import policy
from orchestration.policy import Cluster, Config, Failures, Node, Request, WorkerView

SIZES = {"a": 300.0, "b": 450.0, "c": 600.0, "d": 700.0}
GPUS = {"c": 0.5, "d": 1.0}
ENGINES = {"a": "e1", "b": "e1", "c": "e2", "d": "e2"}
SPARE_SIZES = {"e1": 100.0, "e2": 250.0}
CONFIG = Config(keep_alive_s=30, start_timeout_s=60, heartbeat_grace_s=5)
LOAD_TICKS = 2
NEVER_FITS = ("The model ", "These models ", "No machine can run models")  # policy._never_fits's reasons


class World:
    def __init__(self, budgets: list[float], max_workers: int | None, gpus: list[float] = (),
                 reserve_requested: bool = False, spares: bool = False):
        gpus = [*gpus, *[0.0] * len(budgets)]
        self.nodes = tuple(Node(f"n{i}", budget, gpus=gpus[i]) for i, budget in enumerate(budgets))
        self.reserve_requested = reserve_requested
        self.config = dataclasses.replace(CONFIG, max_workers=max_workers)
        self.now = 0.0
        self.workers: dict[str, WorkerView] = {}
        self.requests: dict[str, Request] = {}
        self.leases: dict[str, list[str]] = {}  # request -> workers it holds
        self.failures: dict[str, Failures] = {}
        self.ended: set[str] = set()
        self._ids = 0
        self.spare_sizes = SPARE_SIZES if spares else {}
        self.spares: dict[tuple[str, str], float] = {}  # (node, engine) -> memory

    # --- events ---------------------------------------------------------------------
    def request(self, slugs: tuple[str, ...], prewarm: bool) -> None:
        request_id = self._new_id("r")
        self.requests[request_id] = Request(request_id, slugs, arrived_at=self.now, prewarm=prewarm)

    def release(self, index: int) -> None:
        if self.leases:
            request_id = sorted(self.leases)[index % len(self.leases)]
            for worker_id in self.leases.pop(request_id):
                if worker_id in self.workers:
                    worker = self.workers[worker_id]
                    self._update(worker, leases=worker.leases - 1, last_used=self.now)

    def crash(self, index: int) -> None:
        alive = sorted(w for w, v in self.workers.items() if v.exit_code is None)
        if alive:
            self._update(self.workers[alive[index % len(alive)]], exit_code=-9)

    def toggle_busy(self, index: int) -> None:
        ready = sorted(w for w, v in self.workers.items() if v.state == "ready" and v.exit_code is None)
        if ready:
            worker = self.workers[ready[index % len(ready)]]
            self._update(worker, in_flight=1 - worker.in_flight, last_used=self.now)

    # --- the tick ---------------------------------------------------------------------
    def tick(self) -> None:
        self.now += 1.0
        self._progress_workers()
        cluster = Cluster(
            workers=tuple(self.workers.values()),
            requests=tuple(self.requests.values()),
            nodes=self.nodes,
            estimates_mb=SIZES,
            failures=dict(self.failures),
            gpus=GPUS,
            reserve_requested=self.reserve_requested,
            spares=tuple(policy.Spare(engine, mb, node) for (node, engine), mb in self.spares.items()),
            spare_sizes=self.spare_sizes,
            engines=ENGINES,
        )
        for action in policy.plan(cluster, self.now, self.config):
            self._apply(action)
        self._check_budgets()

    def _apply(self, action) -> None:
        if isinstance(action, policy.Spawn):
            worker_id = self._new_id(f"w-{action.slug}")
            self.workers[worker_id] = WorkerView(worker_id, action.slug, "starting", started_at=self.now,
                                                 last_used=self.now, node_id=action.node_id)
            self.spares.pop((action.node_id, ENGINES[action.slug]), None)  # it starts in its engine's spare
        elif isinstance(action, policy.StartSpare):
            assert (action.node_id, action.engine) not in self.spares, f"a second spare: {action}"
            self.spares[(action.node_id, action.engine)] = self.spare_sizes[action.engine]
        elif isinstance(action, policy.DropSpare):
            del self.spares[(action.node_id, action.engine)]
        elif isinstance(action, policy.Stop):
            worker = self.workers[action.worker_id]
            assert worker.state == "ready", f"stopped a {worker.state} worker: {action}"
            assert worker.in_flight == 0 and worker.leases == 0, f"stopped a busy worker: {worker}"
            assert not worker.pinned, f"stopped a pinned worker: {worker}"
            self._update(worker, state="stopping")
        elif isinstance(action, policy.Fail):
            slug = self.workers.pop(action.worker_id).slug
            previous = self.failures.get(slug)
            self.failures[slug] = Failures((previous.count if previous else 0) + 1, self.now)
        elif isinstance(action, policy.Grant):
            request = self.requests.pop(action.request_id)
            assert {slug for slug, _ in action.workers} == set(request.slugs)
            self.ended.add(request.request_id)
            if not request.prewarm:
                held = [worker_id for _, worker_id in action.workers]
                for worker_id in held:
                    self._update(self.workers[worker_id], leases=self.workers[worker_id].leases + 1)
                self.leases[request.request_id] = held
        elif isinstance(action, policy.Refuse):
            # Only a request no node could ever hold: never for being busy (the fair line decides who waits).
            assert action.reason.startswith(NEVER_FITS), f"refused as busy: {action}"
            self.requests.pop(action.request_id)
            self.ended.add(action.request_id)

    def _progress_workers(self) -> None:
        for worker in list(self.workers.values()):
            if worker.state == "stopping":
                del self.workers[worker.worker_id]
            elif worker.exit_code is not None:
                continue
            elif worker.state == "starting" and self.now - worker.started_at >= LOAD_TICKS:
                # Measured memory comes in under the estimate (the estimate includes headroom).
                self._update(worker, state="ready", memory_mb=SIZES[worker.slug] * 0.9, last_heartbeat=self.now)
                self.failures.pop(worker.slug, None)
            elif worker.state == "ready":
                self._update(worker, last_heartbeat=self.now)

    def _check_budgets(self) -> None:
        for node in self.nodes:
            holding = [w for w in self.workers.values() if w.node_id == node.node_id and w.state in policy.HOLDS_MEMORY]
            held = sum(SIZES[w.slug] if w.memory_mb is None or self.reserve_requested else w.memory_mb
                       for w in holding)
            held += sum(mb for (node_id, _), mb in self.spares.items() if node_id == node.node_id)
            assert held <= node.budget_mb, f"{node.node_id}: {held} MB reserved of {node.budget_mb}"
            gpus = sum(GPUS.get(w.slug, 0.0) for w in holding)
            assert gpus <= node.gpus, f"{node.node_id}: {gpus} GPUs held of {node.gpus}"

    def _update(self, worker: WorkerView, **changes) -> None:
        self.workers[worker.worker_id] = dataclasses.replace(worker, **changes)

    def _new_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}-{self._ids}"


variant_sets = st.lists(st.sampled_from(sorted(SIZES)), min_size=1, max_size=2, unique=True).map(tuple)
events = st.lists(
    st.one_of(
        st.tuples(st.just("request"), variant_sets, st.booleans()),
        st.tuples(st.just("release"), st.integers(0, 20)),
        st.tuples(st.just("crash"), st.integers(0, 20)),
        st.tuples(st.just("busy"), st.integers(0, 20)),
        st.tuples(st.just("tick")),
    ),
    max_size=60,
)


@settings(max_examples=int(os.environ.get("POLICY_EXAMPLES", 300)), deadline=None)
@given(
    budgets=st.lists(st.sampled_from([800.0, 1200.0, 2000.0]), min_size=1, max_size=2),
    max_workers=st.sampled_from([None, 2, 3]),
    script=events,
    gpus=st.lists(st.sampled_from([0.0, 1.0, 2.0]), max_size=2),
    reserve_requested=st.booleans(),
    spares=st.booleans(),
)
def test_budgets_hold_busy_workers_survive_and_every_request_ends(budgets, max_workers, script, gpus,
                                                                   reserve_requested, spares):
    world = World(budgets, max_workers, gpus, reserve_requested, spares)
    for event in script:
        if event[0] == "request":
            world.request(event[1], prewarm=event[2])
        elif event[0] == "release":
            world.release(event[1])
        elif event[0] == "crash":
            world.crash(event[1])
        elif event[0] == "busy":
            world.toggle_busy(event[1])
        world.tick()
    # Events over: requests finish their work and release their leases.
    for _ in range(300):
        while world.leases:
            world.release(0)
        for worker in list(world.workers.values()):
            if worker.in_flight:
                world._update(worker, in_flight=0)
        if not _real(world.requests):
            break
        world.tick()
    # A prewarm request may wait for free memory forever (it never evicts); its holder lets it lapse.
    assert not _real(world.requests), f"still waiting after 300 ticks: {world.requests}, workers {world.workers}"


def _real(requests: dict[str, Request]) -> list[Request]:
    return [r for r in requests.values() if not r.prewarm]
