"""The orchestrator's policy, pure: given what it sees and the time, what to do.

No I/O, no clock of its own: the service feeds it observations and `now`, and
carries out the actions it returns. Tests drive it with a fake clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# Worker states as the orchestrator sees them.
STARTING = "starting"
READY = "ready"
STOPPING = "stopping"
STOPPED = "stopped"
FAILED = "failed"
ALIVE = frozenset({STARTING, READY})
HOLDS_MEMORY = frozenset({STARTING, READY, STOPPING})  # a stopping process still holds its memory
LOCAL_NODE = "local"
# How every failure by a lost machine begins: not the model's fault, so no back-off before it is
# served again elsewhere.
LOST_MACHINE = "The machine serving this model was lost"


@dataclass(frozen=True)
class Config:
    keep_alive_s: float = 600.0  # unload a worker idle for this long
    start_timeout_s: float = 300.0  # a worker not ready by then has failed to load
    heartbeat_grace_s: float = 6.0  # a ready worker silent for this long has hung
    lease_ttl_s: float = 30.0  # a lease lapses this long after its holder last renewed it
    # A waiting lease (not prewarm) whose holder stopped renewing it (its task died) gives up its
    # place in line sooner: holders renew every second while they wait.
    wait_ttl_s: float = 10.0
    retry_base_s: float = 2.0  # a variant that failed waits this, doubling per failure, before a retry
    retry_max_s: float = 60.0
    max_workers: int | None = None  # optional cap on loaded workers, across nodes

    def retry_delay(self, failures: int) -> float:
        return 0.0 if failures <= 0 else min(self.retry_max_s, self.retry_base_s * 2 ** (failures - 1))


@dataclass(frozen=True)
class WorkerView:
    """One worker as observed this tick."""

    worker_id: str
    slug: str
    state: str
    started_at: float
    last_used: float
    last_heartbeat: float | None = None  # None: not heartbeating (yet)
    in_flight: int = 0
    queued: int = 0
    exit_code: int | None = None  # set once the process has exited
    error: str = ""  # what the worker said about itself (e.g. its load error)
    progress_at: float | None = None  # when a slow load (AWQ quantisation) last reported progress
    node_id: str = LOCAL_NODE
    memory_mb: float | None = None  # measured once loaded; until then the variant's estimate counts
    leases: int = 0  # granted requests (battles) holding this worker
    pinned: bool = False  # an admin keeps it loaded

    @property
    def idle(self) -> bool:
        return self.in_flight == 0 and self.queued == 0 and self.leases == 0


@dataclass(frozen=True)
class Node:
    """A machine workers run on, and the memory (and GPUs) they may reserve there."""

    node_id: str = LOCAL_NODE
    budget_mb: float = math.inf
    alive: bool = True
    gpus: float = 0.0  # GPUs its workers may ask for (a worker asks for a fraction or whole ones)
    name: str = ""  # for people: an address (the id when empty)


@dataclass(frozen=True)
class Spare:
    """A worker process started ahead with one engine's libraries imported (the local backend's), idle
    until a variant of that engine starts on its node and takes it over. It holds memory like a
    worker and is the first thing to go when a model needs that memory."""

    engine: str
    memory_mb: float
    node_id: str = LOCAL_NODE


@dataclass(frozen=True)
class Request:
    """Variants one caller needs at the same time: both models of a battle, or a generation's one.

    Granted only when every one is ready (all or nothing, so two battles can never
    each hold half of what the other needs). A prewarm request (the next match of a
    tournament) only uses free memory: it never evicts and never blocks anyone.
    """

    request_id: str
    slugs: tuple[str, ...]
    arrived_at: float
    prewarm: bool = False


@dataclass(frozen=True)
class Failures:
    """A variant's failures in a row (reset once it loads), and when the last one was."""

    count: int
    last_at: float


@dataclass(frozen=True)
class Cluster:
    """Everything the policy sees in one tick."""

    workers: tuple[WorkerView, ...] = ()
    requests: tuple[Request, ...] = ()  # waiting ones; granted requests count as worker leases
    nodes: tuple[Node, ...] = (Node(),)
    estimates_mb: dict[str, float] = field(default_factory=dict)  # slug -> weights + KV reservation
    failures: dict[str, Failures] = field(default_factory=dict)
    gpus: dict[str, float] = field(default_factory=dict)  # slug -> GPUs one worker of it asks for
    # A worker holds what it asked for, whatever it measures (Ray reserves the request for the
    # actor's life); otherwise its measured memory counts once it has one.
    reserve_requested: bool = False
    # The cluster can grow (nodes join; an autoscaler adds them): a request no node can hold waits
    # with its reason (`Unplaceable`) instead of being refused.
    elastic: bool = False
    spares: tuple[Spare, ...] = ()  # the spare processes alive now
    # engine -> the memory one spare of it holds: the engines whose spares the backend keeps, one per
    # node where memory nobody waits for allows (empty: none).
    spare_sizes: dict[str, float] = field(default_factory=dict)
    engines: dict[str, str] = field(default_factory=dict)  # slug -> its engine (which spare it takes)

    def reservation(self, worker: WorkerView) -> float:
        if worker.memory_mb is not None and not self.reserve_requested:
            return worker.memory_mb
        return self.estimates_mb.get(worker.slug, 0.0)

    def need(self, slug: str) -> tuple[float, float]:
        """(memory in MB, GPUs) one worker of `slug` needs."""
        return self.estimates_mb.get(slug, 0.0), self.gpus.get(slug, 0.0)


@dataclass(frozen=True)
class Spawn:
    slug: str
    node_id: str = LOCAL_NODE


@dataclass(frozen=True)
class Stop:
    worker_id: str
    reason: str


@dataclass(frozen=True)
class Fail:
    worker_id: str
    reason: str


@dataclass(frozen=True)
class StartSpare:
    engine: str
    node_id: str = LOCAL_NODE


@dataclass(frozen=True)
class DropSpare:
    """Stop a spare at once (it holds nothing but imported libraries): its memory is wanted."""

    engine: str
    node_id: str
    reason: str


@dataclass(frozen=True)
class Grant:
    """Every variant of the request is ready: slug -> worker, in the request's order."""

    request_id: str
    workers: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Refuse:
    """A request no live node could ever hold. Never for being busy: the fair line
    (arena/generations/admission.py) decides how much waits, and what it admits is served in turn."""

    request_id: str
    reason: str


@dataclass(frozen=True)
class Unplaceable:
    """An elastic cluster's request that no node can hold now, even by evicting: it keeps its place
    and waits for a node to join (the backend asks an autoscaler for one). `reason` says what it
    needs when no node could ever hold it; "" when the nodes are merely full."""

    request_id: str
    reason: str


Action = Spawn | Stop | Fail | Grant | Refuse | Unplaceable | StartSpare | DropSpare


def describe_exit(code: int) -> str:
    if code < 0:
        return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _lost_node(worker: WorkerView, cluster: Cluster) -> str:
    """A worker on a node that is not alive (or no longer listed) is gone with it."""
    name = next((n.name for n in cluster.nodes if n.node_id == worker.node_id and n.name), worker.node_id)
    return f"{LOST_MACHINE} (node {name}); the model worker there is gone."


def _failure(worker: WorkerView, now: float, config: Config) -> str | None:
    """Why an alive worker must be declared failed, or None."""
    if worker.exit_code is not None:
        if worker.error:
            return worker.error
        return f"The model worker {describe_exit(worker.exit_code)}."
    if worker.state == STARTING:
        # A load that keeps reporting progress (a one-time quantisation) may take longer
        # than the timeout; the timeout then counts from its last progress report.
        if worker.progress_at is None and now - worker.started_at > config.start_timeout_s:
            return f"The model did not finish loading within {config.start_timeout_s:.0f} s."
        if worker.progress_at is not None and now - max(worker.progress_at, worker.started_at) > config.start_timeout_s:
            return f"The model's loading made no progress for {config.start_timeout_s:.0f} s."
    if worker.state == READY and worker.last_heartbeat is not None:
        silent = now - worker.last_heartbeat
        if silent > config.heartbeat_grace_s:
            return f"The model worker stopped responding (no heartbeat for {silent:.0f} s)."
    return None


def plan(cluster: Cluster, now: float, config: Config) -> list[Action]:
    """Decide this tick's actions.

    1. Fail the dead and the hung, and every worker on a node that is lost (not alive, or
       no longer listed).
    2. Serve waiting requests first come, first served (each one was admitted by the fair line, which
       alone decides who waits; none is refused for being busy): grant those whose variants
       are all ready; start the missing variants of the others where memory allows,
       evicting idle workers (least recently used first) when it must. A request
       that cannot fit blocks every later one from taking memory (strict order:
       no starvation, no deadlock); a variant that keeps failing waits out its back-off.
    3. Stop workers idle past the keep-alive that nobody waits for.
    4. Keep a spare of each engine the backend keeps spares for on every quiet node (no worker
       loading or serving) where memory nobody waits for holds it. A variant started on a node
       takes its engine's spare there; a spare other variants need the room of is dropped first,
       before any worker is evicted.
    """
    actions: list[Action] = []
    healthy: list[WorkerView] = []
    failing: set[str] = set()  # not restarted in the tick they fail in: waiting requesters must see it
    live_nodes = {n.node_id for n in cluster.nodes if n.alive}
    for worker in cluster.workers:
        if worker.state not in ALIVE:
            healthy.append(worker)  # stopping: still holds memory until it exits
            continue
        if worker.exit_code is not None and worker.error:
            reason: str | None = worker.error  # its own account (or its cluster's) says the most
        elif worker.node_id not in live_nodes:
            reason = _lost_node(worker, cluster)
        else:
            reason = _failure(worker, now, config)
        if reason:
            actions.append(Fail(worker.worker_id, reason))
            failing.add(worker.slug)
        else:
            healthy.append(worker)
    ledger = Ledger(cluster, healthy)
    actions += _restore_budgets(ledger, cluster)
    actions += _serve_requests(cluster, ledger, now, config, failing)
    actions += _stop_idle(ledger, cluster, now, config)
    actions += _keep_spares(ledger, cluster, actions)
    return actions


class Ledger:
    """This tick's memory bookkeeping per node.

    `reserved` is what live processes hold, stopping ones included: an evicted
    worker's memory is only free once its process has exited, so what eviction
    frees is tracked apart (`freeing`) and a variant waits for it rather than
    starting on top of it.
    """

    def __init__(self, cluster: Cluster, workers: list[WorkerView]):
        self.cluster = cluster
        self.workers = {w.worker_id: w for w in workers if w.exit_code is None}
        self.nodes = {n.node_id: n for n in cluster.nodes if n.alive}
        self.reserved = dict.fromkeys(self.nodes, 0.0)
        self.freeing = dict.fromkeys(self.nodes, 0.0)
        self.gpus_held = dict.fromkeys(self.nodes, 0.0)  # GPUs, kept like memory: held until the process exits
        self.gpus_freeing = dict.fromkeys(self.nodes, 0.0)
        for worker in self.workers.values():
            if worker.state in HOLDS_MEMORY and worker.node_id in self.reserved:
                self.reserved[worker.node_id] += cluster.reservation(worker)
                self.gpus_held[worker.node_id] += cluster.gpus.get(worker.slug, 0.0)
                if worker.state == STOPPING:
                    self.freeing[worker.node_id] += cluster.reservation(worker)
                    self.gpus_freeing[worker.node_id] += cluster.gpus.get(worker.slug, 0.0)
        self.spares: dict[tuple[str, str], float] = {}  # (node, engine) -> memory held by a spare there
        for spare in cluster.spares:
            if spare.node_id in self.reserved:
                self.spares[(spare.node_id, spare.engine)] = spare.memory_mb
                self.reserved[spare.node_id] += spare.memory_mb
        self.evicted: set[str] = set()
        self.spawned: list[tuple[str, str]] = []  # (slug, node) started this tick
        self.claimed: set[str] = set()  # slugs waiting this tick for evicted workers to exit

    def serving(self, slug: str) -> list[WorkerView]:
        return [w for w in self.workers.values()
                if w.slug == slug and w.state in ALIVE and w.worker_id not in self.evicted]

    def starting(self, slug: str) -> bool:
        """Spawned this tick, or claimed memory to start once evicted workers exit."""
        return any(spawned == slug for spawned, _ in self.spawned) or slug in self.claimed

    def ready_worker(self, slug: str) -> WorkerView | None:
        ready = [w for w in self.serving(slug) if w.state == READY]
        return min(ready, key=lambda w: w.in_flight + w.queued) if ready else None

    def loaded_count(self) -> int:
        alive = sum(1 for w in self.workers.values() if w.state in ALIVE and w.worker_id not in self.evicted)
        return alive + len(self.spawned)

    def free(self, node_id: str) -> float:
        return self.nodes[node_id].budget_mb - self.reserved[node_id]

    def gpus_free(self, node_id: str) -> float:
        return self.nodes[node_id].gpus - self.gpus_held[node_id]

    def fits(self, node_id: str, slug: str) -> bool:
        """Whether `slug` can start on the node now: in what is free and not claimed by a variant
        waiting there for evicted workers to exit (a claim beyond what they free eats into it)."""
        memory, gpus = self.cluster.need(slug)
        return (self.free(node_id) + self.spare_for(slug, node_id) + min(0.0, self.freeing[node_id]) >= memory
                and self.gpus_free(node_id) + min(0.0, self.gpus_freeing[node_id]) >= gpus)

    def spare_for(self, slug: str, node_id: str) -> float:
        """The memory of the spare `slug` would take over on the node (0: none there)."""
        return self.spares.get((node_id, self.cluster.engines.get(slug, "")), 0.0)

    def drop_spares(self, node_id: str | None, reason: str, keep_for: str = "") -> list[DropSpare]:
        """Drop the spares on a node (every node: None) but the one `keep_for` would take over; their memory is free
        at once (the backend stops them before it goes on)."""
        kept = self.cluster.engines.get(keep_for, "") if keep_for else ""
        dropped = [key for key in self.spares if key[0] == (node_id or key[0]) and key[1] != kept]
        for key in dropped:
            self.reserved[key[0]] -= self.spares.pop(key)
        return [DropSpare(engine, node, reason) for node, engine in sorted(dropped)]

    def free_soon(self, node_id: str) -> float:
        """Free once the stopping workers have exited (minus what waiting variants claimed)."""
        return self.free(node_id) + self.freeing[node_id]

    def evictable(self, node_id: str | None, protected: set[str]) -> list[WorkerView]:
        """Idle, unpinned, ready workers nobody earlier in the queue needs: LRU first, larger first on ties."""
        candidates = [
            w for w in self.workers.values()
            if w.state == READY and w.idle and not w.pinned and w.slug not in protected
            and w.worker_id not in self.evicted and (node_id is None or w.node_id == node_id)
        ]
        return sorted(candidates, key=lambda w: (w.last_used, -self.cluster.reservation(w)))

    def snapshot(self):
        return (dict(self.reserved), dict(self.freeing), set(self.evicted), list(self.spawned), set(self.claimed),
                dict(self.gpus_held), dict(self.gpus_freeing), dict(self.spares))

    def restore(self, snapshot) -> None:
        reserved, freeing, evicted, spawned, claimed, gpus_held, gpus_freeing, spares = snapshot
        self.spares = dict(spares)
        self.reserved, self.freeing, self.evicted = dict(reserved), dict(freeing), set(evicted)
        self.spawned, self.claimed = list(spawned), set(claimed)
        self.gpus_held, self.gpus_freeing = dict(gpus_held), dict(gpus_freeing)

    def evict(self, worker: WorkerView) -> None:
        self.evicted.add(worker.worker_id)
        self.freeing[worker.node_id] += self.cluster.reservation(worker)
        self.gpus_freeing[worker.node_id] += self.cluster.gpus.get(worker.slug, 0.0)

    def place(self, slug: str, node_id: str) -> None:
        """Start `slug` on the node, taking over its engine's spare there (its memory becomes the worker's)."""
        self.spawned.append((slug, node_id))
        if self.spare_for(slug, node_id):
            self.reserved[node_id] -= self.spares.pop((node_id, self.cluster.engines[slug]))
        memory, gpus = self.cluster.need(slug)
        self.reserved[node_id] += memory
        self.gpus_held[node_id] += gpus

    def gpus_free_soon(self, node_id: str) -> float:
        return self.gpus_free(node_id) + self.gpus_freeing[node_id]

    def claim(self, slug: str, node_id: str) -> None:
        """Memory (and GPUs) a waiting variant will take once they are freed."""
        memory, gpus = self.cluster.need(slug)
        self.freeing[node_id] -= memory
        self.gpus_freeing[node_id] -= gpus
        self.claimed.add(slug)


def _serve_requests(cluster: Cluster, ledger: Ledger, now: float, config: Config, failing: set[str]) -> list[Action]:
    actions: list[Action] = []
    ordered = sorted(cluster.requests, key=lambda r: (r.prewarm, r.arrived_at, r.request_id))
    protected: set[str] = set()  # variants of requests already considered: later ones may not evict them
    blocked = False
    for request in ordered:
        earlier = set(protected)  # what requests ahead of this one need
        protected.update(request.slugs)
        too_big = _never_fits(cluster, request)
        if too_big and not cluster.elastic:
            actions.append(Refuse(request.request_id, too_big))
            continue
        ready = [w for slug in request.slugs if (w := ledger.ready_worker(slug)) is not None]
        if len(ready) == len(request.slugs):
            actions.append(Grant(request.request_id, tuple((w.slug, w.worker_id) for w in ready)))
            continue
        missing = [s for s in dict.fromkeys(request.slugs) if not ledger.serving(s) and not ledger.starting(s)]
        if not missing or any(s in failing or _backing_off(cluster, s, now, config) for s in missing):
            continue  # loading, or waiting out a failure's back-off
        short = cluster.elastic and not request.prewarm  # a cluster that can grow hears what it lacks
        if too_big:  # an elastic cluster: it waits for a node that can hold it, and blocks nobody
            if short:
                actions.append(Unplaceable(request.request_id, too_big))
            continue
        if blocked:
            if short:
                actions.append(Unplaceable(request.request_id, ""))
            continue
        placed = _place_all(ledger, missing, protected, allow_eviction=not request.prewarm, config=config)
        if placed is None and not request.prewarm:
            placed = _place_moving_own(ledger, request, missing, earlier, config)
        if placed is None and short:
            actions.append(Unplaceable(request.request_id, ""))
        if placed is None or not placed[1]:
            # It cannot fit yet, or waits for evicted workers to exit: nobody behind it may take memory.
            blocked = blocked or not request.prewarm
        if placed is not None:
            actions += placed[0]
    return actions


class StartOrder:
    """The order waiting requests' models start in, for the expected wait (not a place told to users:
    the fair line, arena/generations/admission.py, is the only line). A request whose models all come
    with earlier ones (generations waiting for the same model) starts with them instead of after."""

    def __init__(self):
        self.length = 0
        self.places: dict[str, int] = {}  # slug -> the start of the first request that needs it

    def join(self, slugs: tuple[str, ...]) -> tuple[int, bool]:
        """The start a request needing `slugs` waits for, and whether it is a new one."""
        if all(slug in self.places for slug in slugs):
            return max(self.places[slug] for slug in slugs), False
        self.length += 1
        for slug in slugs:
            self.places.setdefault(slug, self.length)
        return self.length, True


def _never_fits(cluster: Cluster, request: Request) -> str | None:
    """Why no live node could ever hold the request (even empty), or None."""
    alive = [n for n in cluster.nodes if n.alive]
    if not alive:
        return "No machine can run models right now: no node is available."
    largest = max(n.budget_mb for n in alive)
    for slug in request.slugs:
        memory, gpus = cluster.need(slug)
        if not any(n.budget_mb >= memory and n.gpus >= gpus for n in alive):
            wants = f"about {memory:.0f} MB" + (f" and {_gpus(gpus)} on one machine" if gpus else "")
            if memory > largest:
                lacking = f"the largest node has {largest:.0f} MB"
            elif not any(n.gpus >= gpus for n in alive):
                lacking = f"no node has {_gpus(gpus)}"
            else:
                lacking = "no node has both"
            return f"The model {slug} needs {wants}; {lacking}."
    slugs = sorted(set(request.slugs), key=lambda s: cluster.need(s), reverse=True)
    if not _packs([cluster.need(s) for s in slugs], [[n.budget_mb, n.gpus] for n in alive]):
        need = sum(cluster.estimates_mb.get(slug, 0.0) for slug in slugs)
        if len(alive) == 1 and need > largest:
            return f"These models need about {need:.0f} MB together; this machine has {largest:.0f} MB for models."
        gpus = sum(cluster.gpus.get(slug, 0.0) for slug in slugs)
        wants = f"about {need:.0f} MB" + (f" and {_gpus(gpus)}" if gpus else "")
        return f"These models need {wants} together; no set of nodes can hold them all at once."
    return None


def _packs(needs: list[tuple[float, float]], room: list[list[float]]) -> bool:
    """Whether every (memory, GPUs) need fits on the nodes' (budget, GPUs) at once (an exact search:
    a request holds a few models)."""
    if not needs:
        return True
    memory, gpus = needs[0]
    for node in room:
        if node[0] >= memory and node[1] >= gpus:
            node[0] -= memory
            node[1] -= gpus
            fits = _packs(needs[1:], room)
            node[0] += memory
            node[1] += gpus
            if fits:
                return True
    return False


def _gpus(count: float) -> str:
    return f"{count:g} GPU" if count <= 1 else f"{count:g} GPUs"


def _backing_off(cluster: Cluster, slug: str, now: float, config: Config) -> bool:
    failed = cluster.failures.get(slug)
    return failed is not None and now < failed.last_at + config.retry_delay(failed.count)


def _place_all(ledger: Ledger, slugs: list[str], protected: set[str], *, allow_eviction: bool,
               config: Config) -> tuple[list[Action], bool] | None:
    """Make room for every one of `slugs` or for none (None).

    Returns the actions and whether every variant was started; a variant that needs
    evicted workers to exit first starts on a later tick, its memory claimed meanwhile.
    """
    snapshot = ledger.snapshot()
    actions: list[Action] = []
    all_started = True
    for slug in sorted(slugs, key=lambda s: -ledger.cluster.estimates_mb.get(s, 0.0)):  # largest first
        step = _place_one(ledger, slug, protected, allow_eviction, config)
        if step is None:
            ledger.restore(snapshot)
            return None
        actions += step
        all_started = all_started and bool(step) and isinstance(step[-1], Spawn)
    return actions, all_started


def _place_moving_own(ledger: Ledger, request: Request, missing: list[str], earlier: set[str],
                      config: Config) -> tuple[list[Action], bool] | None:
    """The request's own idle workers may stand where its missing variants must go (the only node
    with a GPU holds a model that needs none): move them, stopping them and placing them again
    with the missing ones, or None. Without it such a request would wait forever."""
    own = [w for slug in dict.fromkeys(request.slugs) if slug not in earlier and slug not in missing
           for w in ledger.evictable(None, earlier) if w.slug == slug]
    if not own:
        return None
    snapshot = ledger.snapshot()
    stops: list[Action] = []
    for worker in own:
        ledger.evict(worker)
        stops.append(Stop(worker.worker_id, f"evicted to make room for {', '.join(missing)} (it starts again)"))
    placed = _place_all(ledger, [*missing, *(w.slug for w in own)], earlier, allow_eviction=True, config=config)
    if placed is None:
        ledger.restore(snapshot)
        return None
    return [*stops, *placed[0]], False  # the moved ones start once their old workers have exited


def _place_one(ledger: Ledger, slug: str, protected: set[str], allow_eviction: bool,
               config: Config) -> list[Action] | None:
    """Spawn `slug` where it fits now; else claim memory being freed; else evict (Stops only)."""
    actions: list[Action] = []
    if config.max_workers is not None and ledger.loaded_count() >= config.max_workers:
        victims = ledger.evictable(None, protected) if allow_eviction else []
        if not victims:
            return None
        ledger.evict(victims[0])
        actions.append(Stop(victims[0].worker_id, f"evicted: at most {config.max_workers} loaded models"))
    fitting = [n for n in ledger.nodes if ledger.fits(n, slug)]
    if not fitting and ledger.spares:  # spares are the first to make room (no warm model is lost)
        actions += ledger.drop_spares(None, f"its memory is needed for {slug}", keep_for=slug)
        fitting = [n for n in ledger.nodes if ledger.fits(n, slug)]
    if fitting:
        node_id = min(fitting, key=lambda n: (ledger.free(n), n))  # the fullest node it fits on: best fit
        ledger.place(slug, node_id)
        return [*actions, Spawn(slug, node_id)]
    if not allow_eviction:
        return None
    target, victims = _cheapest_eviction(ledger, slug, protected)
    if target is None:
        return None
    for victim in victims:
        ledger.evict(victim)
        actions.append(Stop(victim.worker_id, f"evicted to make room for {slug}"))
    ledger.claim(slug, target)
    return actions


def _cheapest_eviction(ledger: Ledger, slug: str, protected: set[str]) -> tuple[str | None, list[WorkerView]]:
    """The node where the fewest idle workers must go (none, if stopping ones free enough)."""
    need, gpus_needed = ledger.cluster.need(slug)
    best: tuple[str | None, list[WorkerView]] = (None, [])
    for node_id in sorted(ledger.nodes):
        freed = ledger.free_soon(node_id) + ledger.spare_for(slug, node_id)  # the spare it would take over
        gpus, victims = ledger.gpus_free_soon(node_id), []
        for candidate in ledger.evictable(node_id, protected):
            if freed >= need and gpus >= gpus_needed:
                break
            victims.append(candidate)
            freed += ledger.cluster.reservation(candidate)
            gpus += ledger.cluster.gpus.get(candidate.slug, 0.0)
        if freed >= need and gpus >= gpus_needed and (best[0] is None or len(victims) < len(best[1])):
            best = (node_id, victims)
    return best


def _restore_budgets(ledger: Ledger, cluster: Cluster) -> list[Action]:
    """A node over its budget (workers measured larger than estimated) sheds idle workers."""
    wanted = {slug for request in cluster.requests for slug in request.slugs}
    actions: list[Action] = []
    for node_id in sorted(ledger.nodes):
        if ledger.free_soon(node_id) < 0:
            actions += ledger.drop_spares(node_id, "the node is over its memory budget")
        for victim in ledger.evictable(node_id, wanted):
            if ledger.free_soon(node_id) >= 0:
                break
            ledger.evict(victim)
            actions.append(Stop(victim.worker_id, "evicted: the node is over its memory budget"))
    return actions


def _stop_idle(ledger: Ledger, cluster: Cluster, now: float, config: Config) -> list[Action]:
    wanted = {slug for request in cluster.requests for slug in request.slugs}
    actions: list[Action] = []
    for worker in ledger.workers.values():
        if worker.worker_id in ledger.evicted or worker.state != READY or not worker.idle or worker.pinned:
            continue
        idle_for = now - worker.last_used
        if worker.slug not in wanted and idle_for > config.keep_alive_s:
            actions.append(Stop(worker.worker_id, f"idle for {idle_for:.0f} s"))
    return actions


def _keep_spares(ledger: Ledger, cluster: Cluster, actions: list[Action]) -> list[Action]:
    """A spare of each engine in `spare_sizes` (smallest first) on every node that is quiet (no worker
    starting, stopping or serving there: a spare's imports take seconds of CPU beside them) and has
    the memory free, while no request waits (what it waits for comes first)."""
    granted = {a.request_id for a in actions if isinstance(a, Grant)}
    if not cluster.spare_sizes or any(r.request_id not in granted for r in cluster.requests):
        return []
    busy = {n for _, n in ledger.spawned} | {
        w.node_id for w in ledger.workers.values()
        if w.state != READY or not (w.in_flight == 0 and w.queued == 0) or w.worker_id in ledger.evicted}
    started: list[Action] = []
    for node_id in sorted(set(ledger.nodes) - busy):
        for engine, memory in sorted(cluster.spare_sizes.items(), key=lambda item: (item[1], item[0])):
            if (node_id, engine) not in ledger.spares and ledger.free(node_id) >= memory:
                ledger.spares[(node_id, engine)] = memory
                ledger.reserved[node_id] += memory
                started.append(StartSpare(engine, node_id))
    return started
