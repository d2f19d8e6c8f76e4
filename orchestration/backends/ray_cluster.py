"""The Ray backend: each model worker runs in a Ray actor (`ray_host.WorkerHost`) on the node Ray
chooses, with the resources its catalogue entry asks for (memory estimate, CPUs, GPUs).

What Ray does here: it knows the nodes and what each has and holds (`nodes()` reads its node
table), places each actor where its request fits (the policy's choice of node is passed as a
soft preference, so a worker lands where an eviction made room, and Ray overrides it when that
node cannot hold it), notices a node that dies or is removed, kills workers when a node runs
out of memory, and ends an orchestrator's actors with it (an orchestrator that restarts finds
none of its predecessor's workers alive). When a request fits no node, `demand()` asks Ray's
autoscaler for the resources; on a cluster that does not autoscale that request is harmless.

What stays ours (orchestration/policy.py): which variants run at all (leases, the line, LRU
eviction, pre-warm, pinning, budgets) and how a failure is retried.

Watching a worker costs one small call per tick: each worker has at most one `poll` call in
flight, read when it is done (an exit code, or the actor's death with Ray's reason).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any

from inference.protocol import ModelSpec
from orchestration.backends import ray_host
from orchestration.policy import LOST_MACHINE, Node

log = logging.getLogger(__name__)

MB = 2**20
GONE_EXIT = 255  # the exit code of a worker whose actor died (its node lost, killed by Ray, never placed)
STOP_GRACE_S = 15.0  # the host SIGKILLs a worker 10 s after its SIGTERM; then the actor goes
LOST_NODE_SHOWN_S = 900.0  # a dead node stays on the status page this long after it was seen to die
NODES_TTL_S = 0.5  # Ray's node table is read at most this often
CALL_TIMEOUT_S = 5.0  # a call whose answer the orchestrator waits for (a log tail)
NAMESPACE = "llm-arena"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def connect(address: str, namespace: str = NAMESPACE) -> None:
    """Join the Ray cluster at `address` ("host:port" of its head, or "ray://host:port") as a driver.

    A cluster on this machine's loopback (one machine, tests): Ray would rewrite 127.0.0.1 into
    the machine's network address, where nothing listens; its switch for single-machine clusters
    keeps the loopback (read when Ray is imported, so it is set first)."""
    host = address.removeprefix("ray://").rsplit(":", 1)[0].strip("[]")
    if host in LOOPBACK_HOSTS:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray

    if not ray.is_initialized():
        ray.init(address=address, namespace=namespace, log_to_driver=False, logging_level=logging.WARNING,
                 configure_logging=False)


@dataclass
class _Hosted:
    actor: Any  # the WorkerHost actor handle
    asked_node: str  # the policy's choice (a soft preference)
    started_at: float  # time.monotonic()
    placed: Any = None  # the `where` call's ObjectRef until it is read
    node_id: str | None = None  # where Ray placed it, once known
    pid: int | None = None
    polling: Any = None  # the poll call in flight
    exit_code: int | None = None
    reason: str = ""  # why Ray ended it, in words a user can read
    stop_sent_at: float | None = None


@dataclass
class _NodeInfo:
    node: Node  # what the policy sees (its name included)
    resources: dict[str, float]
    reason: str = ""
    dead_since: float | None = None  # time.monotonic() when this orchestrator first saw it dead


@dataclass
class _Nodes:
    read_at: float = -1.0
    by_id: dict[str, _NodeInfo] = field(default_factory=dict)


class RayBackend:
    """Workers as Ray actors on the cluster this process has joined (`connect`)."""

    elastic = True  # a node can join (or an autoscaler add one): what fits no node waits
    reserves_requested = True  # Ray holds an actor's requested memory for the actor's life

    def __init__(self, prefix: str, clock=time.monotonic):
        import ray

        self.ray = ray
        self.prefix = prefix
        self.clock = clock
        self._hosts: dict[str, _Hosted] = {}
        self._nodes = _Nodes()
        self._lost: set[str] = set()  # nodes an actor's death said were gone, before the node table may
        self._demand: list[dict] | None = None
        self._host_class = ray.remote(max_restarts=0, max_task_retries=0)(ray_host.WorkerHost)

    # --- the nodes, as Ray reports them -------------------------------------------------
    def _refresh_nodes(self) -> dict[str, _NodeInfo]:
        now = self.clock()
        if now - self._nodes.read_at < NODES_TTL_S:
            return self._nodes.by_id
        previous = self._nodes.by_id
        by_id = {}
        for raw in self.ray.nodes():
            node_id = raw["NodeID"]
            alive = bool(raw["Alive"]) and node_id not in self._lost
            was = previous.get(node_id)
            if not alive and was is None:
                continue  # died before this orchestrator watched: none of its workers, no news
            resources = raw.get("Resources") or (was.resources if was else {})
            name = raw.get("NodeName") or ""
            if name in ("", raw["NodeManagerAddress"]):  # Ray's default name, the IP: make it unique
                name = f"{raw['NodeManagerAddress']}:{raw['NodeManagerPort']}"
            dead_since = None if alive else (was.dead_since if was and was.dead_since is not None else now)
            node = Node(node_id, budget_mb=resources.get("memory", 0.0) / MB, alive=alive,
                        gpus=resources.get("GPU", 0.0), name=name)
            by_id[node_id] = _NodeInfo(node, resources, raw.get("DeathReasonMessage") or "", dead_since)
        self._nodes = _Nodes(now, by_id)
        return by_id

    def nodes(self) -> list[Node]:
        """The live nodes, and the dead ones our workers were on (the policy fails those workers)."""
        by_id = self._refresh_nodes()
        ours = {h.node_id or h.asked_node for h in self._hosts.values()}
        return [info.node for info in by_id.values() if info.node.alive or info.node.node_id in ours]

    def describe_nodes(self) -> list[dict]:
        """Each node for the status page: name, alive (or Ray's reason), totals, and what is in use."""
        by_id = self._refresh_nodes()
        available = self._available_per_node()
        now = self.clock()
        shown = []
        for node_id, info in sorted(by_id.items(), key=lambda item: item[1].node.name):
            if not info.node.alive and (info.dead_since is None or now - info.dead_since > LOST_NODE_SHOWN_S):
                continue
            totals = _figures(info.resources)
            free = _figures(available.get(node_id, {})) if info.node.alive else None
            in_use = {k: round(totals[k] - free[k], 2) for k in totals} if free is not None else None
            shown.append({"node": node_id, "name": info.node.name, "alive": info.node.alive,
                          "reason": "" if info.node.alive else (info.reason or "Ray lost contact with it"),
                          "budget_mb": info.node.budget_mb, "resources": totals, "in_use": in_use})
        return shown

    def _available_per_node(self) -> dict[str, dict[str, float]]:
        """Ray's available resources per live node (its state API for this is a developer one)."""
        try:
            from ray._private.state import available_resources_per_node

            return available_resources_per_node()
        except Exception as exc:  # not worth failing a tick over: the page then shows no "in use"
            log.warning("Could not read Ray's available resources: %s", exc)
            return {}

    def node_name(self, node_id: str) -> str:
        info = self._nodes.by_id.get(node_id)
        return info.node.name if info else node_id

    # --- the Backend interface ------------------------------------------------------------
    def start(self, worker_id: str, spec: ModelSpec, node_id: str) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        options: dict[str, Any] = {
            "name": f"arena-worker-{worker_id}",
            "num_cpus": spec.cpus,
            "num_gpus": spec.gpus,
            "memory": int(spec.memory_mb * MB),
            "scheduling_strategy": NodeAffinitySchedulingStrategy(node_id, soft=True),
        }
        actor = self._host_class.options(**options).remote(worker_id, spec.to_json(), self.prefix)
        self._hosts[worker_id] = _Hosted(actor, node_id, self.clock(), placed=actor.where.remote())  # type: ignore[attr-defined]
        return None  # the pid is known once Ray has placed it

    def _settle(self, worker_id: str) -> _Hosted | None:
        """Read whatever calls of this worker's have finished: where it runs, whether it exited."""
        host = self._hosts.get(worker_id)
        if host is None or host.exit_code is not None:
            return host
        for attr in ("placed", "polling"):
            ref = getattr(host, attr)
            if ref is None or not self.ray.wait([ref], timeout=0)[0]:
                continue
            setattr(host, attr, None)
            try:
                value = self.ray.get(ref)
            except self.ray.exceptions.ActorUnavailableError:
                continue  # restarting or unreachable for a moment: ask again
            except self.ray.exceptions.RayActorError as exc:
                self._died(host, exc)
                return host
            if attr == "placed":
                host.node_id, host.pid = value["node_id"], value["pid"]
            elif value is not None:
                host.exit_code = value
        if host.exit_code is None and host.stop_sent_at is not None and self.clock() - host.stop_sent_at > STOP_GRACE_S:
            log.warning("Worker %s still runs %.0f s after its stop: ending its actor", worker_id, STOP_GRACE_S)
            self.ray.kill(host.actor, no_restart=True)
            host.stop_sent_at = None  # its pending calls now fail with the actor's death
        if host.exit_code is None and host.polling is None and host.node_id is not None:
            host.polling = host.actor.poll.remote()
        return host

    def _died(self, host: _Hosted, exc: Exception) -> None:
        host.exit_code = GONE_EXIT
        host.reason = self._death_reason(host, str(exc))
        if host.reason.startswith(LOST_MACHINE) and host.node_id:
            # Nothing more may be placed there, even while Ray's node table still says it is alive.
            self._lost.add(host.node_id)
            self._nodes.read_at = -1.0
        log.warning("Ray ended the actor of a worker on node %s: %s", host.node_id, str(exc).splitlines()[-1:])

    def _death_reason(self, host: _Hosted, message: str) -> str:
        """Ray's account of an actor's death, in words a user can read."""
        lowered = message.lower()
        if "memory monitor" in lowered or "out of memory" in lowered or "low on memory" in lowered:
            return "Ray's out-of-memory monitor stopped the model worker: its machine ran short of memory."
        if "node has died" in lowered or "node died" in lowered or "raylet" in lowered:
            info = self._refresh_nodes().get(host.node_id or "")
            # Ray's cause comes with the actor's error ("...node was terminated expectedly: received
            # SIGTERM") before its node table may say the node is dead.
            cause = next((line.split(": ", 1)[1].strip() for line in message.splitlines()
                          if "node was terminated" in line and ": " in line), "") or (info.reason if info else "")
            name = info.node.name if info else host.node_id
            return f"{LOST_MACHINE} (Ray: node {name} died{': ' + cause if cause else ''})."
        if host.node_id is None:
            return "The model worker was never placed on a machine (Ray cancelled it)."
        return "The model worker's Ray actor died: " + (message.strip().splitlines() or ["no reason given"])[-1]

    def poll(self, worker_id: str) -> int | None:
        host = self._settle(worker_id)
        return host.exit_code if host else None

    def exit_reason(self, worker_id: str) -> str:
        """Why Ray ended the worker ("" when it exited by itself: its exit code says it)."""
        host = self._hosts.get(worker_id)
        return host.reason if host else ""

    def node_of(self, worker_id: str) -> str | None:
        """The node Ray placed the worker on (None until it is placed)."""
        host = self._settle(worker_id)
        return host.node_id if host else None

    def pid(self, worker_id: str) -> int | None:
        host = self._settle(worker_id)
        return host.pid if host else None

    def log_tail(self, worker_id: str, lines: int = 5) -> str:
        host = self._hosts.get(worker_id)
        if host is None or host.node_id is None:
            return "" if host is None else "Waiting for Ray to place it on a node with room."
        try:
            return self.ray.get(host.actor.log_tail.remote(lines), timeout=CALL_TIMEOUT_S)
        except Exception:  # a dead or unreachable actor has no log to give: its reason says why
            return ""

    def stop(self, worker_id: str) -> None:
        host = self._hosts.get(worker_id)
        if host is None or host.exit_code is not None:
            return
        if host.node_id is None:  # never placed: nothing runs yet
            self.ray.kill(host.actor, no_restart=True)
            return
        host.stop_sent_at = self.clock()
        host.actor.stop.remote()

    def kill(self, worker_id: str) -> None:
        """The worker's process is killed; the actor stays until `forget`, for its log tail."""
        host = self._hosts.get(worker_id)
        if host is None or host.exit_code is not None:
            return
        if host.node_id is None:
            self.ray.kill(host.actor, no_restart=True)
        else:
            host.actor.kill.remote()

    def forget(self, worker_id: str) -> None:
        """The worker has exited: its actor goes, and with it what Ray held for it."""
        host = self._hosts.pop(worker_id, None)
        if host is not None:
            self.ray.kill(host.actor, no_restart=True)

    def stop_orphan(self, pid: int, node_id: str) -> str:
        """An earlier orchestrator's worker: Ray ended its actors when that orchestrator went."""
        return "Ray ended it with the orchestrator that started it"

    def spare_sizes(self) -> dict[str, float]:
        """No spares: a spare is the local backend's (Ray starts a process per actor anyway)."""
        return {}

    def spares(self) -> list:
        return []

    def start_spare(self, engine: str, node_id: str) -> None:
        raise NotImplementedError("the Ray backend keeps no spares")

    def drop_spare(self, engine: str, node_id: str) -> None:
        raise NotImplementedError("the Ray backend keeps no spares")

    def demand(self, specs: list[ModelSpec]) -> None:
        """Ask Ray's autoscaler for room for these workers together (only when what is asked changes)."""
        bundles = [bundle(spec) for spec in specs]
        if bundles == self._demand:
            return
        from ray.autoscaler.sdk import request_resources

        request_resources(bundles=bundles)
        self._demand = bundles

    def shutdown(self, timeout: float = STOP_GRACE_S) -> None:
        """Stop every worker, wait for them to exit, then end their actors."""
        for worker_id in list(self._hosts):
            self.stop(worker_id)
        deadline = self.clock() + timeout
        while self.clock() < deadline and any(self.poll(w) is None and self._hosts[w].node_id for w in self._hosts):
            time.sleep(0.2)
        for worker_id in list(self._hosts):
            self.forget(worker_id)
        if self._demand:
            self.demand([])


def bundle(spec: ModelSpec) -> dict[str, float]:
    """What one worker of `spec` asks Ray for, as a resource bundle."""
    shape = {"CPU": spec.cpus, "memory": float(int(spec.memory_mb * MB))}
    if spec.gpus:
        shape["GPU"] = spec.gpus
    return shape


def _figures(resources: dict[str, float]) -> dict[str, float]:
    return {"cpus": resources.get("CPU", 0.0), "gpus": resources.get("GPU", 0.0),
            "memory_mb": round(resources.get("memory", 0.0) / MB, 1)}
