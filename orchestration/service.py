"""The orchestrator ("Hades"): the single writer of which variants run where.

Each tick it reads requests from its Redis inbox, observes its workers (process
exit, the worker's own status hash, heartbeat, queue length), asks the pure
policy what to do and does it. It knows nothing of Django: what it should
remember for the admin goes through a `Recorder`.
"""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol, cast

import redis

from inference import protocol as p
from inference.protocol import Keys, ModelSpec

from . import policy
from .policy import Cluster, Config, Fail, Failures, Node, Request, Spawn, Stop, Unplaceable, WorkerView
from .redis_text import text, text_hash

log = logging.getLogger(__name__)
DEFAULT_COLD_START_S = 30.0  # a model's expected cold start before one was measured


class Recorder(Protocol):
    def transition(self, worker_id: str, slug: str, state: str, at: float, **fields) -> None: ...


class NullRecorder:
    def transition(self, worker_id, slug, state, at, **fields):
        """Remembers nothing: for an orchestrator run without a database (tests, tools)."""


@dataclass
class Lease:
    """Variants one caller holds together (a battle's two models, a generation's one), renewed while in use."""

    request_id: str
    slugs: tuple[str, ...]
    since: float  # its place in line
    renewed_at: float
    prewarm: bool = False
    workers: dict[str, str] | None = None  # once granted: slug -> worker id

    def lapsed(self, now: float, config: Config) -> bool:
        waiting = self.workers is None and not self.prewarm  # its holder renews every second
        return now - self.renewed_at > (config.wait_ttl_s if waiting else config.lease_ttl_s)


class Orchestrator:
    def __init__(
        self,
        backend,
        client: redis.Redis,
        keys: Keys,
        config: Config | None = None,
        recorder: Recorder | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.backend = backend
        self.redis = client
        self.keys = keys
        self.config = config or Config()
        self.recorder = recorder or NullRecorder()
        self.clock = clock
        self.specs: dict[str, ModelSpec] = {}
        self.workers: dict[str, dict] = {}  # worker_id -> {slug, state, started_at}
        self.failures: dict[str, Failures] = {}  # slug -> failures in a row
        self.leases: dict[str, Lease] = {}
        self.cold_starts: dict[str, float] = {}  # slug -> its last measured cold start
        self.nodes: tuple[Node, ...] = ()  # as the backend reported them this tick
        self.short: dict[str, str] = {}  # request id -> why no node can hold it now (this tick's Unplaceable)
        self.redis_was_down = False  # a tick failed on Redis: workers could not heartbeat meanwhile

    # --- the loop -----------------------------------------------------------------
    def tick(self) -> None:
        now = self.clock()
        self._after_redis_trouble(now)
        self._read_inbox(now)
        self._reap(now)  # first: an exited worker's memory is free for this tick's decisions
        self._check_leases(now)
        self.nodes = tuple(self.backend.nodes())
        views = [self._observe(worker_id, now) for worker_id in list(self.workers)]
        self._note_ready(views, now)
        cluster = self._cluster(views, now)
        actions = policy.plan(cluster, now, self.config)
        self.short = {}
        for action in actions:
            self._apply(action, now)
        self._ask_for_room(cluster)
        self._publish_queue(cluster, actions)
        self._publish_status(views, now)
        self.redis.set(self.keys.orchestrator_heartbeat(), repr(now), ex=p.HEARTBEAT_TTL_S)

    def run(self, should_stop: Callable[[], bool], interval_s: float = 0.2,
            on_tick: Callable[[], None] | None = None) -> None:
        """Tick until told to stop; `on_tick` is housekeeping of the caller's (the sweeper)."""
        self.recover()
        while not should_stop():
            try:
                self.tick()
                if on_tick is not None:
                    on_tick()
            except redis.RedisError as exc:  # Redis restarting: keep trying
                log.warning("Redis unavailable: %s", exc)
                self.redis_was_down = True
                time.sleep(1.0)
            except Exception:  # housekeeping (or a bug) must not stop the single writer of placements
                log.exception("Orchestrator tick failed")
                time.sleep(1.0)
            time.sleep(interval_s)
        self.shutdown()

    def shutdown(self) -> None:
        now = self.clock()
        self.backend.shutdown()
        for worker_id, info in list(self.workers.items()):
            self._set_state(worker_id, info["slug"], policy.STOPPED, now, reason="orchestrator stopped")
        self.workers.clear()

    # --- inputs -------------------------------------------------------------------
    def _read_inbox(self, now: float) -> None:
        while raw := self.redis.lpop(self.keys.orchestrator_inbox()):
            try:
                msg = json.loads(text(cast("bytes", raw)))  # LPOP without a count pops one
                op, request_id = msg["op"], str(msg["request_id"])
                specs = [ModelSpec(**spec) for spec in msg["specs"]] if op == "lease" else []
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("Ignoring a malformed orchestrator request %r: %s", raw[:200], exc)
                continue
            for spec in specs:
                self.specs[spec.slug] = spec
            if op == "lease" and specs:
                self._renew_lease(request_id, tuple(s.slug for s in specs), bool(msg.get("prewarm")), now)
            elif op == "release":
                self._end_lease(request_id, "released")
            else:
                log.warning("Ignoring an orchestrator request with op %r", op)

    def _renew_lease(self, request_id: str, slugs: tuple[str, ...], prewarm: bool, now: float) -> None:
        lease = self.leases.get(request_id)
        if lease is None:
            lease = self.leases[request_id] = Lease(request_id, slugs, since=now, renewed_at=now, prewarm=prewarm)
            self.redis.hset(self.keys.lease(request_id), mapping={"state": "waiting"})
        lease.renewed_at = now
        self.redis.expire(self.keys.lease(request_id), int(self.config.lease_ttl_s) + 5)

    def _end_lease(self, request_id: str, why: str) -> None:
        if self.leases.pop(request_id, None) is not None:
            log.info("Lease %s %s", request_id, why)
        self.redis.delete(self.keys.lease(request_id))

    def _check_leases(self, now: float) -> None:
        """Lapse the unrenewed; a granted lease whose worker has gone waits to be granted again."""
        for lease in list(self.leases.values()):
            if lease.lapsed(now, self.config):
                self._end_lease(lease.request_id, "lapsed")
            elif lease.workers and any(w not in self.workers for w in lease.workers.values()):
                lease.workers = None
                self.redis.hset(self.keys.lease(lease.request_id), mapping={"state": "waiting", "workers": ""})

    def _cluster(self, views: list[WorkerView], now: float) -> Cluster:
        requests = tuple(
            Request(lease.request_id, lease.slugs, arrived_at=lease.since, prewarm=lease.prewarm)
            for lease in self.leases.values()
            if lease.workers is None
        )
        estimates = {slug: float(spec.memory_mb) for slug, spec in self.specs.items()}
        gpus = {slug: float(spec.gpus) for slug, spec in self.specs.items() if spec.gpus}
        return Cluster(workers=tuple(views), requests=requests, nodes=self.nodes, estimates_mb=estimates,
                       failures=self.failures, gpus=gpus, reserve_requested=self.backend.reserves_requested,
                       elastic=self.backend.elastic, spares=tuple(self.backend.spares()),
                       spare_sizes=self.backend.spare_sizes(),
                       engines={slug: spec.engine for slug, spec in self.specs.items()})

    def _observe(self, worker_id: str, now: float) -> WorkerView:
        info = self.workers[worker_id]
        status = text_hash(self.redis.hgetall(self.keys.worker(worker_id)))
        get = lambda k, d="": status.get(k) or d  # noqa: E731
        heartbeat = self.redis.exists(self.keys.worker_heartbeat(worker_id))
        if heartbeat:
            info["last_heartbeat"] = now
        if get("decode"):
            info["decode"] = get("decode")  # how a loaded worker decodes: captured steps or eager, and why
        # Never older than seen before: a Redis restarted empty forgets it until the worker writes it again.
        info["last_used"] = max(float(get("last_used", "0")) or info["started_at"], info.get("last_used", 0.0))
        exit_code = self.backend.poll(worker_id)
        self._note_node(worker_id, info)
        # What the worker said of its failure, else why the backend's cluster ended it (a lost machine).
        error = get("error") if get("state") == p.W_FAILED else ""
        if exit_code is not None and not error:
            error = self.backend.exit_reason(worker_id)
        return WorkerView(
            worker_id=worker_id,
            slug=info["slug"],
            state=info["state"],
            started_at=info["started_at"],
            last_used=info["last_used"],
            last_heartbeat=info.get("last_heartbeat"),
            in_flight=int(get("in_flight", "0")),
            queued=self.redis.llen(self.keys.worker_jobs(worker_id)),
            exit_code=exit_code,
            error=error,
            progress_at=float(get("progress_at")) if get("progress_at") else None,
            node_id=info["node"],
            memory_mb=float(get("memory_mb")) if get("memory_mb") else None,
            leases=sum(1 for lease in self.leases.values() if lease.workers and worker_id in lease.workers.values()),
        )

    def _note_node(self, worker_id: str, info: dict) -> None:
        """Where the backend actually placed the worker (Ray may choose another node than asked)."""
        node = self.backend.node_of(worker_id)
        if node and node != info["node"]:
            info["node"] = node
            self.redis.hset(self.keys.worker(worker_id), "node", node)

    def _note_ready(self, views: list[WorkerView], now: float) -> None:
        """A starting worker that says it is ready becomes the variant's placement."""
        for view in views:
            if view.state != policy.STARTING or view.exit_code is not None:
                continue
            status = self.redis.hget(self.keys.worker(view.worker_id), "state")
            if status and text(status) == p.W_READY:
                cold = now - view.started_at
                self.workers[view.worker_id].update(ready_at=now, cold_start_s=round(cold, 2))
                self.cold_starts[view.slug] = cold
                self.failures.pop(view.slug, None)
                self._set_state(view.worker_id, view.slug, policy.READY, now, cold_start_s=cold)
                log.info("Worker %s for %s ready after %.1f s", view.worker_id, view.slug, cold)

    # --- actions ------------------------------------------------------------------
    def _apply(self, action, now: float) -> None:
        if isinstance(action, policy.Grant):
            self._grant(action)
        elif isinstance(action, policy.Refuse):
            self._refuse(action)
        elif isinstance(action, Spawn):
            self._spawn(action.slug, action.node_id, now)
        elif isinstance(action, Unplaceable):
            self.short[action.request_id] = action.reason
        elif isinstance(action, Fail):
            info = self.workers[action.worker_id]
            self.backend.kill(action.worker_id)
            reason = self._with_log_tail(action.worker_id, action.reason)
            log.warning("Worker %s for %s failed: %s", action.worker_id, info["slug"], reason)
            if not reason.startswith(policy.LOST_MACHINE):  # a lost machine is no reason to back off
                previous = self.failures.get(info["slug"])
                self.failures[info["slug"]] = Failures((previous.count if previous else 0) + 1, now)
            self._set_state(action.worker_id, info["slug"], policy.FAILED, now, reason=reason)
        elif isinstance(action, policy.StartSpare):
            self.backend.start_spare(action.engine, action.node_id)
        elif isinstance(action, policy.DropSpare):
            log.info("Dropping the %s spare on node %s: %s", action.engine, action.node_id, action.reason)
            self.backend.drop_spare(action.engine, action.node_id)
        elif isinstance(action, Stop):
            info = self.workers[action.worker_id]
            log.info("Stopping worker %s for %s: %s", action.worker_id, info["slug"], action.reason)
            self.backend.stop(action.worker_id)
            self._set_state(action.worker_id, info["slug"], policy.STOPPING, now, reason=action.reason)

    def _with_log_tail(self, worker_id: str, reason: str) -> str:
        """The reason, with the worker's last log line where that may say more (not after a signal,
        a hang, a slow load or a machine its cluster lost: the log cannot tell more then)."""
        if any(word in reason for word in ("signal", "heartbeat", "loading", "machine", "Ray")):
            return reason
        tail = self.backend.log_tail(worker_id, lines=1)
        return f"{reason} ({tail[-300:]})" if tail and tail not in reason else reason

    def _ask_for_room(self, cluster: Cluster) -> None:
        """A cluster that can grow is told what its running workers and its short requests need
        together (Ray's autoscaler adds nodes until that fits); nothing once nobody is short."""
        if not self.backend.elastic:
            return
        if not self.short:
            self.backend.demand([])
            return
        running = [self.specs[w.slug] for w in cluster.workers if w.state in policy.ALIVE and w.slug in self.specs]
        served = {w.slug for w in cluster.workers if w.state in policy.ALIVE}
        wanted = [self.specs[slug] for r in cluster.requests if r.request_id in self.short
                  for slug in dict.fromkeys(r.slugs) if slug not in served]
        self.backend.demand([*running, *wanted])

    def _grant(self, action: policy.Grant) -> None:
        """A lease learns its workers here; a prewarm lease ends, its models warm."""
        lease = self.leases.get(action.request_id)
        if lease is None:
            return
        if lease.prewarm:  # warm now: nothing to hold
            self._end_lease(lease.request_id, "prewarmed")
            return
        lease.workers = dict(action.workers)
        self.redis.hset(self.keys.lease(lease.request_id), mapping={
            "state": "granted", "workers": json.dumps(lease.workers),
            "ready_after": json.dumps(self._ready_after(lease))})

    def _ready_after(self, lease: Lease) -> dict[str, float]:
        """Per model of a granted lease, how long after the lease arrived its worker became ready: 0 for
        one warm already. A battle's two sides are granted together, when the slower is ready; this says
        which of them loaded (so the warm side's figure is not the pair's wait)."""
        assert lease.workers is not None
        return {slug: round(max(0.0, self.workers.get(worker_id, {}).get("ready_at", lease.since) - lease.since), 3)
                for slug, worker_id in lease.workers.items()}

    def _refuse(self, action: policy.Refuse) -> None:
        """Tell the holder of a lease that cannot be served now (or ever) why; the lease ends."""
        if self.leases.pop(action.request_id, None) is not None:
            self.redis.hset(self.keys.lease(action.request_id), mapping={"state": "refused", "reason": action.reason})

    def _publish_queue(self, cluster: Cluster, actions: list) -> None:
        """What each lease still waiting for a model to start waits for, and about how long.

        No place in line: the fair line (arena/generations/admission.py) is the only one users hear
        of, and what it admits is served here in turn. The expected wait adds up the cold starts of
        the models that start before its own and with it (`policy.StartOrder`: leases waiting for the
        same models start together; each model's last measured cold start, DEFAULT_COLD_START_S before
        it has one).
        """
        started = {a.slug for a in actions if isinstance(a, Spawn)}
        serving = {w.slug for w in cluster.workers if w.state in policy.ALIVE}
        waiting = [r for r in sorted(cluster.requests, key=lambda r: (r.arrived_at, r.request_id))
                   if not r.prewarm and not set(r.slugs) <= serving | started]
        order, expected = policy.StartOrder(), [0.0]  # expected[start]: the wait up to the end of that start
        pipe = self.redis.pipeline()
        pipe.delete(self.keys.orchestrator_queue())
        for request in waiting:
            fresh = [slug for slug in request.slugs if slug not in order.places]
            start, new = order.join(request.slugs)
            if new:
                expected.append(expected[-1] + max(self.cold_starts.get(s, DEFAULT_COLD_START_S) for s in fresh))
            retrying = any(slug in cluster.failures for slug in request.slugs)
            reason = self.short.get(request.request_id) or (
                "retrying after a failure" if retrying else "waiting for memory")
            entry = {"since": request.arrived_at, "expected_wait_s": round(expected[start]), "reason": reason}
            pipe.hset(self.keys.orchestrator_queue(), request.request_id, json.dumps(entry))
        pipe.execute()

    def _publish_status(self, observed: list[WorkerView], now: float) -> None:
        """The snapshot the staff status page and GET /api/v1/workers show (kept a few ticks).

        The tick's observations with the states its actions set; only workers started
        this tick are read afresh.
        """
        seen = {view.worker_id: view for view in observed}
        views = [
            replace(seen[worker_id], state=info["state"]) if worker_id in seen
            else self._observe(worker_id, now)
            for worker_id, info in self.workers.items()
        ]
        cluster = self._cluster(views, now)
        nodes = [self._node_status(node, views, cluster) for node in self.backend.describe_nodes()]
        status = {"at": now, "nodes": nodes, "workers": [self._worker_status(view, cluster) for view in views]}
        self.redis.set(self.keys.orchestrator_status(), json.dumps(status), ex=10)

    @staticmethod
    def _node_status(node: dict, views: list[WorkerView], cluster: Cluster) -> dict:
        """A node as its backend describes it ({"node", "name", "alive", "reason", "budget_mb",
        "resources": {"cpus", "gpus", "memory_mb"}, "in_use": the same as its cluster reports, or
        None}) with what this orchestrator reserved there, its spares' memory included, and those
        spares ({"engine", "memory_mb"}: processes started ahead, no model in them)."""
        budget = node.get("budget_mb")
        spares = [{"engine": s.engine, "memory_mb": round(s.memory_mb)} for s in cluster.spares
                  if s.node_id == node["node"]]
        reserved = sum(cluster.reservation(w) for w in views
                       if w.state in policy.HOLDS_MEMORY and w.node_id == node["node"])
        return {**node, "budget_mb": budget if budget is not None and math.isfinite(budget) else None,
                "reserved_mb": reserved + sum(s.memory_mb for s in cluster.spares if s.node_id == node["node"]),
                "spares": spares}

    def _worker_status(self, view: WorkerView, cluster: Cluster) -> dict:
        info = self.workers[view.worker_id]
        return {
            "worker_id": view.worker_id,
            "slug": view.slug,
            "node": view.node_id,
            "node_name": self.backend.node_name(view.node_id),
            "state": view.state,
            "reserved_mb": cluster.reservation(view),
            "estimate_mb": cluster.estimates_mb.get(view.slug),
            "measured_mb": view.memory_mb,
            "in_flight": view.in_flight + view.queued,
            "started_at": view.started_at,
            "ready_at": info.get("ready_at"),
            "last_used": view.last_used,
            "cold_start_s": info.get("cold_start_s"),
            "decode": info.get("decode", ""),
        }

    def _spawn(self, slug: str, node_id: str, now: float) -> None:
        spec = self.specs[slug]
        worker_id = f"{slug}-{uuid.uuid4().hex[:8]}"
        self.workers[worker_id] = {"slug": slug, "state": policy.STARTING, "started_at": now, "node": node_id}
        # Where it runs, for a restarted orchestrator that finds it (the worker fills in the rest).
        self.redis.hset(self.keys.worker(worker_id), "node", node_id)
        pid = self.backend.start(worker_id, spec, node_id)
        log.info("Starting worker %s (pid %s) for %s on node %s", worker_id, pid, slug, node_id)
        self._set_state(worker_id, slug, policy.STARTING, now, pid=pid, node=node_id)

    def _reap(self, now: float) -> None:
        """Forget workers whose process has gone after a stop or a failure."""
        for worker_id, info in list(self.workers.items()):
            if info["state"] in (policy.STOPPING, policy.FAILED) and self.backend.poll(worker_id) is not None:
                if info["state"] == policy.STOPPING:
                    self._set_state(worker_id, info["slug"], policy.STOPPED, now)
                self.backend.forget(worker_id)
                del self.workers[worker_id]
                # Keep the dead worker's status a while for whoever still asks, then let it go.
                self.redis.expire(self.keys.worker(worker_id), p.STREAM_TTL_S)
                self.redis.delete(self.keys.worker_jobs(worker_id))

    def _set_state(self, worker_id: str, slug: str, state: str, now: float, reason: str = "", **fields) -> None:
        info = self.workers.get(worker_id)
        if info is not None:
            info["state"] = state
        self._publish_placement(worker_id, slug, state, now, reason)
        self.recorder.transition(worker_id, slug, state, now, reason=reason, **fields)

    def _publish_placement(self, worker_id: str, slug: str, state: str, now: float, reason: str) -> None:
        """Tell requesters where `slug` is served, or why it is not."""
        key = self.keys.variant(slug)
        current = self.redis.hget(key, "worker_id")
        if state in (policy.STARTING, policy.READY) or current is None or text(current) == worker_id:
            self.redis.hset(key, mapping={"worker_id": worker_id, "state": state, "error": reason, "at": repr(now)})
        if state == policy.FAILED:
            # Kept across the retry's "starting", so every requester waiting since before
            # this failure learns of it, however soon the retry begins.
            self.redis.hset(key, mapping={"last_error": reason, "last_error_at": repr(now)})
            self.redis.hset(self.keys.worker(worker_id), mapping={"state": p.W_FAILED, "error": reason})

    # --- Redis restarts ---------------------------------------------------------------
    def _after_redis_trouble(self, now: float) -> None:
        """After an outage, or a Redis that came back empty (it keeps nothing on disk),
        tell the world again what this process knows: where each variant is served and
        each lease's state. The workers rewrite their own status hashes, and nobody has
        heartbeated while Redis was away, so silence until now is not a hung worker.
        Workers are never restarted for this: the same processes serve on (no duplicates)."""
        wiped = not self.redis.exists(self.keys.orchestrator_epoch())
        if not (wiped or self.redis_was_down):
            return
        for info in self.workers.values():
            info["last_heartbeat"] = now
        if wiped:
            self._publish_again(now)
            self.redis.set(self.keys.orchestrator_epoch(), repr(now))  # last: a tick cut short does it all again
        self.redis_was_down = False

    def _publish_again(self, now: float) -> None:
        if self.workers or self.leases:
            log.warning("Redis lost its state (restarted?): publishing placements and leases again")
        for worker_id, info in self.workers.items():
            self.redis.hset(self.keys.worker(worker_id), "node", info["node"])
            if info["state"] in (policy.STARTING, policy.READY):
                self._publish_placement(worker_id, info["slug"], info["state"], now, "")
        for lease in self.leases.values():
            self.redis.hset(self.keys.lease(lease.request_id), mapping={
                "state": "granted" if lease.workers else "waiting",
                "workers": json.dumps(lease.workers) if lease.workers else ""})
            self.redis.expire(self.keys.lease(lease.request_id), int(self.config.lease_ttl_s) + 5)

    def recover(self) -> None:
        """Start clean after an earlier orchestrator (a restart, a crash).

        Its workers are not this process's children, so they cannot be watched:
        each one still alive is stopped (never two workers for one variant), and
        the placements that pointed at them are cleared.
        """
        prefix = self.keys.worker("")
        for key in self.redis.scan_iter(match=self.keys.worker("*"), count=200):
            worker_id = text(key).removeprefix(prefix)
            if ":" in worker_id:  # the worker's job list or heartbeat, not its status hash
                continue
            status = text_hash(self.redis.hgetall(key))
            if status.get("state") in (p.W_STARTING, p.W_READY) and worker_id not in self.workers:
                node_id = status.get("node") or policy.LOCAL_NODE
                stopped = self.backend.stop_orphan(int(status.get("pid") or 0), node_id)
                log.warning("Stopped worker %s left by an earlier orchestrator (%s)", worker_id, stopped)
                self.redis.hset(key, mapping={"state": p.W_STOPPED, "error": "stopped: the orchestrator restarted"})
        for key in self.redis.scan_iter(match=self.keys.variant("*"), count=200):
            self.redis.delete(key)
