"""The orchestrator under tournament-like load, measured in one run with real workers.

A real orchestrator (local backend, real Redis under a private prefix) serves
variants of the packaged SmolLM2 (each variant its own worker process) and:
- prewarm_switch_ratio: the time from the end of a match to the next match's two
  models being granted, with the next models pre-warmed (a prewarm lease while the
  user judges) over without; the same judging time in both (goal <= 0.5);
- awq_cached_vs_first_cold_start: an AWQ variant's cold start (request to ready)
  from the quantisation cache over its first one, which quantises (goal <= 0.1).
  The first one quantises SmolLM2 in an empty temporary cache: about 25 minutes on
  2 CPU cores. `--awq-model tiny` uses a tiny random model instead (seconds; the
  ratio is then dominated by process start-up, not by quantisation);
- same_model_generations: that many single generations asking for one cold model at
  once (one-model leases, as the playground makes them) must all be served by one
  worker (workers_for_same_model == 1);
- concurrent_tournaments / _finished: that many 4-model knockout tournaments (two
  semi-finals and a final, one short generation per model per match) run at once
  under a budget that holds two models; they must all finish, in fair order (each
  one's first match is granted in the order the tournaments asked);
- ray_vs_local_cold_start: the time from asking for a lease to the first token of a
  cold llama.cpp SmolLM2 variant (the catalogue's smollm2-135m-llamacpp entry) with
  the orchestrator on a local Ray cluster (harness/ray_cluster.py: a head and one
  node on 127.0.0.1, token authentication on) over the same on the local backend,
  same machine, the same threads (goal <= 1.3). The cluster's own start is not
  timed (a cluster starts once); the Ray actor's start is;
- ray_failover_s: that variant serving on node A of the cluster, node A removed
  (its raylet and every process on it stopped), node B there: the seconds from the
  removal to the first token of a new lease, served on node B;
- cold_ttft_s / warm_ttft_s (`--only coldstart` runs just these): per engine and kind
  (transformers full from the converted cache, AWQ from its quantised cache,
  transformers prompt-lookup speculative, llama.cpp, llama.cpp n-gram speculative: the
  catalogue's SmolLM2 entries), the seconds from asking for a lease on the cold variant
  to its first token, and the same for a second lease on the running worker; the
  median of `--cold-rounds` rounds, each with a fresh orchestrator. Measured without
  spare workers and with them (the local backend's processes started ahead with the
  engine's libraries imported: orchestration/backends/local.py), the two interleaved in
  each round; the spare is started and waited for before the lease (it is started ahead
  in use too). Each cold start's worker log says where its seconds went ("Startup: ...").
  The AWQ entry's quantised cache is used when present; else a tiny random model is
  quantised first (not timed) and its cached load measured instead (said in the table).

Prints a table, then one JSON object as its last line.
Usage: python bench/orchestration.py [--awq-model smollm2|tiny] [--skip-awq] [--only ray|coldstart]
                                     [--ray-rounds N] [--cold-rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import redis
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.ray_cluster import RayNodes, ray_env
from inference import protocol as p
from inference.loading import cache_key, load_gguf_cached, model_cache_root
from inference.protocol import Job, Keys, ModelSpec, SamplingParams
from inference.sources import PACKAGED_SMOLLM2, resolve_source
from orchestration import client as orch
from orchestration import policy
from orchestration.backends.local import LocalBackend
from orchestration.policy import Config
from orchestration.service import Orchestrator

REDIS_URL = "redis://127.0.0.1:6379/0"
JUDGING_S = 20.0  # a user reading two answers and voting
MODEL_MB = 2000.0  # a SmolLM2 fp32 worker's estimate: ~1.3 GB resident with torch, plus KV room
TOURNAMENTS = 3
GENERATIONS = 4
PROMPT = [{"role": "user", "content": "Name one planet."}]
SHORT = SamplingParams(temperature=0.0, max_new_tokens=8)
LONG = SamplingParams(temperature=0.0, max_new_tokens=2048)  # still streaming when its node goes
# The catalogue's llama.cpp SmolLM2 entry (arena/catalogue/defaults.py, smollm2-135m-llamacpp) as
# its ModelSpec: 400 MB estimated, 2 CPUs asked of Ray.
LLAMACPP = ModelSpec(slug="smollm2-135m-llamacpp", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1],
                     engine="llamacpp", memory_mb=400.0, cpus=2.0)
# Both backends' workers run this many threads (on Ray a worker would run as many as its CPUs;
# the local backend would pin it to a share of the cores): the comparison is of the backends.
WORKER_THREADS = "2"
# The catalogue's SmolLM2 entries of each engine and kind (arena/catalogue/defaults.py), by the name
# the figures carry.
COLD_VARIANTS = {
    "transformers": ModelSpec(slug="smollm2-135m", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1],
                              memory_mb=900.0),
    "awq": ModelSpec(slug="smollm2-135m-awq", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1],
                     kind="awq", memory_mb=600.0),
    "speculative": ModelSpec(slug="smollm2-135m-spec", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1],
                             kind="speculative", memory_mb=900.0),
    "llamacpp": LLAMACPP,
    "llamacpp_speculative": ModelSpec(slug="smollm2-135m-llamacpp-spec", source=PACKAGED_SMOLLM2[0],
                                      gguf_file=PACKAGED_SMOLLM2[1], engine="llamacpp", kind="speculative",
                                      memory_mb=400.0, cpus=2.0),
}
SPARES = ("transformers", "llamacpp")  # the engines the local backend keeps spares of, when it does
COLD_BUDGET_MB = 4000.0
SPARE_READY_S = 300.0  # a spare's imports take seconds; minutes on a loaded machine
RAY_NODE_MB = 4000.0  # each Ray node's declared memory: room for the variant, not for two
FAILED_WITHIN_S = 120.0  # a lost node's worker must be seen failed by then


class Timeline:
    """The orchestrator's Recorder here: when each worker entered each state (its first time)."""

    def __init__(self):
        self.at: dict[str, dict[str, float]] = {}

    def transition(self, worker_id: str, slug: str, state: str, at: float, **fields) -> None:
        self.at.setdefault(worker_id, {}).setdefault(state, at)


class Harness:
    """An orchestrator running in a thread under a private prefix; everything cleaned up on exit."""

    def __init__(self, budget_mb: float, env: dict[str, str] | None = None, on_ray: bool = False,
                 spares: tuple[str, ...] = ()):
        """On the local backend (keeping `spares`), or (`on_ray`) on the Ray cluster this process has joined
        (`RayCluster`)."""
        self.prefix = f"bench-orch-{uuid.uuid4().hex[:8]}"
        self.keys = Keys(self.prefix)
        self.redis = redis.Redis.from_url(REDIS_URL)
        self.logs = tempfile.mkdtemp(prefix="bench-orch-logs-")
        if on_ray:
            from orchestration.backends.ray_cluster import RayBackend

            backend = RayBackend(self.prefix)  # the nodes' own environment names Redis and the threads
        else:
            backend = LocalBackend(REDIS_URL, self.prefix, Path(self.logs), env=env, budget_mb=budget_mb,
                                   spares=spares)
        self.backend = backend
        self.timeline = Timeline()
        self.orchestrator = Orchestrator(backend, self.redis, self.keys, Config(keep_alive_s=600),
                                         recorder=self.timeline)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.orchestrator.run, args=(self._stop.is_set, 0.1), daemon=True)

    def __enter__(self) -> Harness:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        for key in self.redis.scan_iter(match=f"{self.prefix}:*", count=500):
            self.redis.delete(key)

    def acquire(self, request_id: str, specs: list[ModelSpec], timeout_s: float = 3600) -> dict[str, str]:
        return orch.acquire(self.redis, self.keys, request_id, specs, timeout_s=timeout_s)

    def release(self, request_id: str) -> None:
        orch.release_lease(self.redis, self.keys, request_id)

    def submit(self, worker_id: str, params: SamplingParams = SHORT) -> str:
        """Queue one generation on `worker_id`; its stream key."""
        job = Job(uuid.uuid4().hex, PROMPT, params)
        self.redis.rpush(self.keys.worker_jobs(worker_id), job.to_json())
        return self.keys.stream(job.generation_id)

    def generate(self, worker_id: str, params: SamplingParams = SHORT, until_done: bool = True,
                 timeout_s: float = 600) -> float:
        """One generation on `worker_id` (short by default), waited for to its end (its DONE event), or
        only to its first token; returns when its first token came (time.time())."""
        stream, last, first_token = self.submit(worker_id, params), "0-0", None
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            for _, entries in self.redis.xread({stream: last}, block=1000) or []:
                for entry_id, fields in entries:
                    last = entry_id
                    event = p.parse_event(fields)
                    if event["type"] == p.TOKEN and first_token is None:
                        first_token = time.time()
                        if not until_done:
                            return first_token
                    if event["type"] in p.TERMINAL_EVENTS:
                        if event["type"] != p.DONE:
                            raise RuntimeError(f"generation {event['type']}: {event.get('reason')}")
                        return first_token if first_token is not None else time.time()
        raise RuntimeError(f"generation on {worker_id}: no end within {timeout_s:.0f} s")

    def worker_status(self, worker_id: str) -> dict:
        """The worker as the orchestrator's status snapshot shows it (its node's name among the rest)."""
        raw = self.redis.get(self.keys.orchestrator_status())
        status = json.loads(raw) if raw else {"workers": []}
        return next((w for w in status["workers"] if w["worker_id"] == worker_id), {})


def smollm2_folder() -> str:
    """The converted SmolLM2 checkpoint (filled on first use): every variant loads it in seconds."""
    gguf = resolve_source(*PACKAGED_SMOLLM2)
    load_gguf_cached(gguf, torch.float32)
    return str(model_cache_root() / cache_key(gguf))


def variants(folder: str, count: int) -> list[ModelSpec]:
    return [ModelSpec(slug=f"m{i + 1}", source=folder, memory_mb=MODEL_MB) for i in range(count)]


def play_match(h: Harness, request_id: str, specs: list[ModelSpec]) -> float:
    """Acquire both models, generate on each, release; returns when the lease was granted."""
    workers = h.acquire(request_id, specs)
    granted = time.time()
    for spec in specs:
        h.generate(workers[spec.slug])
    return granted


def switch_time(folder: str, prewarm: bool) -> float:
    """Match 1 (m1, m2), judging, then match 2 (m3, m4): seconds from the vote to match 2 granted."""
    first, second = variants(folder, 4)[:2], variants(folder, 4)[2:]
    with Harness(budget_mb=4 * MODEL_MB + 100) as h:
        play_match(h, "match-1", first)
        judged_until = time.time() + JUDGING_S
        while time.time() < judged_until:  # the user reads and votes; the tournament holds match 1
            orch.request_lease(h.redis, h.keys, "match-1", first)
            if prewarm:
                orch.request_lease(h.redis, h.keys, "prewarm-2", second, prewarm=True)
            time.sleep(1.0)
        h.release("match-1")
        voted = time.time()
        h.acquire("match-2", second)
        return time.time() - voted


def awq_cold_starts(model: str) -> dict:
    """First (quantising) and cached cold start of an AWQ variant, through the orchestrator."""
    with tempfile.TemporaryDirectory(prefix="bench-awq-cache-") as cache:
        if model == "tiny":
            source, gguf = _tiny_awq_model(Path(cache)), ""
        else:
            source, gguf = PACKAGED_SMOLLM2
        spec = ModelSpec(slug="awq", source=source, gguf_file=gguf, kind="awq", memory_mb=MODEL_MB)
        times = []
        for attempt in ("first", "cached"):
            with Harness(budget_mb=4 * MODEL_MB, env={"ARENA_MODEL_CACHE": cache}) as h:
                asked = time.time()
                h.acquire(f"awq-{attempt}", [spec], timeout_s=7200)
                times.append(time.time() - asked)
                h.release(f"awq-{attempt}")
        return {"first_s": times[0], "cached_s": times[1]}


def _tiny_awq_model(root: Path) -> str:
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(smollm2_folder())
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=2048)
    folder = root / "tiny-llama"
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def same_model_generations(folder: str) -> dict:
    """GENERATIONS generations of one cold model asked for at once: how many workers served them, and when."""
    spec = variants(folder, 1)[0]
    granted_after: dict[int, float] = {}
    served_by: set[str] = set()
    errors: list[str] = []
    with Harness(budget_mb=2 * MODEL_MB + 100) as h:
        asked = time.time()

        def run(index: int) -> None:
            try:
                worker_id = h.acquire(f"generation:{index}", [spec])[spec.slug]
                granted_after[index] = time.time() - asked
                served_by.add(worker_id)
                h.generate(worker_id)
                h.release(f"generation:{index}")
            except Exception as exc:  # reported in the figures
                errors.append(f"generation {index}: {exc}")

        threads = [threading.Thread(target=run, args=(index,)) for index in range(GENERATIONS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
    return {"generations": GENERATIONS, "served": len(granted_after), "workers": len(served_by),
            "first_grant_s": min(granted_after.values(), default=None),
            "last_grant_s": max(granted_after.values(), default=None), "errors": errors}


def tournaments(folder: str) -> dict:
    """TOURNAMENTS knockout tournaments over m1..m4 at once; the budget holds two models."""
    pool = variants(folder, 4)
    first_grants: dict[int, float] = {}
    finished: list[int] = []
    errors: list[str] = []

    def run(h: Harness, index: int) -> None:
        order = pool[index % 4:] + pool[:index % 4]  # each tournament seeds the models differently
        try:
            first_grants[index] = play_match(h, f"t{index}-semi1", order[:2])
            h.release(f"t{index}-semi1")
            play_match(h, f"t{index}-semi2", order[2:])
            h.release(f"t{index}-semi2")
            play_match(h, f"t{index}-final", [order[0], order[2]])  # the winners (fixed: no votes here)
            h.release(f"t{index}-final")
            finished.append(index)
        except Exception as exc:  # reported in the figures
            errors.append(f"tournament {index}: {exc}")

    started = time.time()
    with Harness(budget_mb=2 * MODEL_MB + 100) as h:
        threads = []
        for index in range(TOURNAMENTS):
            threads.append(threading.Thread(target=run, args=(h, index)))
            threads[-1].start()
            time.sleep(0.5)  # they ask in this order
        for thread in threads:
            thread.join(timeout=3600)
    granted_order = sorted(first_grants, key=first_grants.get)
    return {
        "started": TOURNAMENTS,
        "finished": len(finished),
        "fair_order": granted_order == sorted(first_grants),
        "first_match_granted_order": granted_order,
        "wall_s": time.time() - started,
        "errors": errors,
    }


class RayCluster:
    """A Ray cluster on this machine (harness/ray_cluster.py: raylets on 127.0.0.1, token authentication
    on, a head that holds no resources) that this process has joined as the orchestrator's driver.

    The nodes' own environment names Redis and the worker threads (the orchestrator passes nothing
    through Ray). One per bench run: a process's Ray keeps the token it first read."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="bench-ray-"))
        os.environ.update(ray_env(self.folder))  # before Ray is imported: the head's, the nodes' and ours
        os.environ.pop("RAY_ADDRESS", None)
        self.nodes = RayNodes({"REDIS_URL": REDIS_URL, "ARENA_WORKER_LOG_DIR": str(self.folder / "logs"),
                               "ARENA_WORKER_THREADS": WORKER_THREADS})
        self.count = 0

    def __enter__(self) -> RayCluster:
        from orchestration.backends.ray_cluster import connect

        connect(self.nodes.address)
        return self

    def __exit__(self, *exc) -> None:
        self.nodes.shutdown()
        shutil.rmtree(self.folder, ignore_errors=True)

    def add(self) -> str:
        """A new node with room for the variant (Ray waits for it to join); its name."""
        self.count += 1
        name = f"node-{self.count}"
        self.nodes.add(name, memory_mb=RAY_NODE_MB, cpus=float(WORKER_THREADS))
        return name


def lease_to_first_token(h: Harness, request_id: str, spec: ModelSpec) -> tuple[str, dict]:
    """Ask for a lease on `spec` (cold), generate on its worker; the worker, and the seconds from the
    request to its first token, with where they went: to the orchestrator's decision to start a
    worker, to the worker ready (the process or actor started, the model loaded and warmed up),
    to the lease seen granted, to the first token."""
    asked = time.time()
    worker_id = h.acquire(request_id, [spec])[spec.slug]
    granted = time.time()
    first_token = h.generate(worker_id)
    states = h.timeline.at.get(worker_id, {})
    started, ready = states.get(policy.STARTING, asked), states.get(policy.READY, granted)
    return worker_id, {"s": first_token - asked, "to_start": started - asked, "start_to_ready": ready - started,
                       "ready_to_granted": granted - ready, "granted_to_token": first_token - granted}


def local_cold_start(spec: ModelSpec) -> dict:
    with Harness(budget_mb=RAY_NODE_MB, env={"ARENA_WORKER_THREADS": WORKER_THREADS}) as h:
        return lease_to_first_token(h, "cold-local", spec)[1]


def ray_cold_start_and_failover(cluster: RayCluster, node_a: str, spec: ModelSpec) -> dict:
    """A cold start on the cluster's only node (`node_a`), then A removed while the variant streams;
    node B joined beforehand (the cluster's only node afterwards). Returns the cold start, the
    failover, how the failure showed, and node B's name."""
    with Harness(budget_mb=RAY_NODE_MB, on_ray=True) as h:
        worker_a, cold = lease_to_first_token(h, "cold-ray", spec)
        served_on = h.worker_status(worker_a).get("node_name")
        h.generate(worker_a, LONG, until_done=False)  # a generation in flight when the machine goes
        node_b = cluster.add()  # the other machine is already there: the figure is not a node's start
        orch.request_lease(h.redis, h.keys, "cold-ray", [spec])  # its holder renews it, as a battle does
        removed = time.time()
        cluster.nodes.remove(node_a)
        worker = h.keys.worker(worker_a)
        while h.redis.hget(worker, "state") != p.W_FAILED.encode():
            if time.time() - removed > FAILED_WITHIN_S:
                raise RuntimeError(f"the worker on {node_a} was not failed {FAILED_WITHIN_S:.0f} s after the removal")
            time.sleep(0.05)
        failed_s = time.time() - removed
        reason = (h.redis.hget(worker, "error") or b"").decode()
        h.release("cold-ray")  # the user whose generation failed asks again
        worker_b = h.acquire("after-failover", [spec])[spec.slug]
        failover_s = h.generate(worker_b) - removed
        serving_on = h.worker_status(worker_b).get("node_name")
        restarted_s = h.timeline.at.get(worker_b, {}).get(policy.STARTING, removed) - removed
    if (served_on, serving_on) != (node_a, node_b) or worker_b == worker_a:
        raise RuntimeError(f"served on {served_on} then {serving_on} (worker {worker_a} then {worker_b}); "
                           f"expected {node_a} then {node_b}")
    return {"cold_start": cold, "failover_s": failover_s, "failed_after_s": failed_s,
            "new_worker_started_after_s": restarted_s, "reason": reason,
            "from": served_on, "to": serving_on, "node_b": node_b}


def ray_figures(rounds: int) -> dict:
    """Cold starts on the local backend and on Ray, interleaved (local first in each round), and the
    failover of each Ray round; the medians (of each round's Ray over local, for the ratio: a round's
    two runs share the machine's load), with every run's figures."""
    resolve_source(*PACKAGED_SMOLLM2).read_bytes()  # neither backend pays the file's first read from disk
    local_cold_start(LLAMACPP)  # nor the first import of llama.cpp's library (not counted)
    local, ray = [], []
    with RayCluster() as cluster:
        node = cluster.add()
        for _ in range(rounds):
            local.append(local_cold_start(LLAMACPP))
            print(f"# cold start, local backend: {json.dumps(local[-1])}", flush=True)
            ray.append(ray_cold_start_and_failover(cluster, node, LLAMACPP))
            node = ray[-1].pop("node_b")  # the next round's only node
            print(f"# cold start and failover on Ray: {json.dumps(ray[-1])}", flush=True)
    ratios = [on_ray["cold_start"]["s"] / here["s"] for on_ray, here in zip(ray, local, strict=True)]
    return {"local_cold_start_s": statistics.median(r["s"] for r in local),
            "ray_cold_start_s": statistics.median(r["cold_start"]["s"] for r in ray),
            "ratio": statistics.median(ratios), "ratios": ratios,
            "failover_s": statistics.median(r["failover_s"] for r in ray),
            "failed_after_s": statistics.median(r["failed_after_s"] for r in ray),
            "restarted_after_s": statistics.median(r["new_worker_started_after_s"] for r in ray),
            "rounds": rounds, "local_runs": local, "ray_runs": ray}


def awq_variant() -> tuple[ModelSpec, dict[str, str], str]:
    """The AWQ entry, with the environment its workers need and what it is: the packaged SmolLM2's
    quantised cache when present; else a tiny random model quantised now into a private cache."""
    from inference.awq import needs_quantising, prepare

    spec = COLD_VARIANTS["awq"]
    if not needs_quantising(spec):
        return spec, {}, "SmolLM2 AWQ, cached"
    print("# the SmolLM2 AWQ cache is absent (quantising takes minutes to tens of minutes on 2 cores): "
          "a tiny random model's quantised cache is measured instead", flush=True)
    cache = tempfile.mkdtemp(prefix="bench-awq-cache-")
    tiny = ModelSpec(slug="tiny-awq", source=_tiny_awq_model(Path(cache)), kind="awq", memory_mb=600.0)
    os.environ["ARENA_MODEL_CACHE"] = cache  # prepare() and the workers use the private cache
    try:
        prepare(tiny, lambda line: None)
    finally:
        os.environ.pop("ARENA_MODEL_CACHE")
    return tiny, {"ARENA_MODEL_CACHE": cache}, "tiny random model AWQ, cached (SmolLM2's cache absent)"


def cold_and_warm(spec: ModelSpec, env: dict[str, str], spares: bool) -> dict:
    """One fresh orchestrator: a cold lease on `spec` to its first token (with where it went, and the
    worker's own account), then a second lease on the running worker to its first token."""
    with Harness(budget_mb=COLD_BUDGET_MB, env={"ARENA_WORKER_THREADS": WORKER_THREADS, **env},
                 spares=SPARES if spares else ()) as h:
        if spares:
            for engine in SPARES:  # all of them: one still importing would slow the cold start beside it
                wait_for_spare(h, engine)
        worker_id, cold = lease_to_first_token(h, "cold", spec)
        h.release("cold")
        asked = time.time()
        h.acquire("warm", [spec])
        cold["warm_s"] = h.generate(worker_id) - asked
        h.release("warm")
        cold["startup"] = startup_line(Path(h.logs) / f"worker-{worker_id}.log")
    return cold


def wait_for_spare(h: Harness, engine: str) -> None:
    """Until the spare of `engine` has done its imports (its log says so)."""
    deadline = time.time() + SPARE_READY_S
    while time.time() < deadline:
        if any("imported in" in path.read_text(errors="replace")
               for path in Path(h.logs).glob(f"spare-{engine}-*.log")):
            return
        time.sleep(0.2)
    raise RuntimeError(f"no {engine} spare ready within {SPARE_READY_S:.0f} s")


def startup_line(log_path: Path) -> str:
    lines = [line for line in log_path.read_text(errors="replace").splitlines() if "Startup:" in line]
    return lines[-1].split("Startup:", 1)[1].strip() if lines else ""


def cold_start_figures(rounds: int) -> dict:
    """cold and warm time to first token per engine and kind, without and with spares (interleaved)."""
    smollm2_folder()  # the converted model is cached (the transformers entries' cold start loads it)
    resolve_source(*PACKAGED_SMOLLM2).read_bytes()  # no run pays the file's first read from disk
    awq_spec, awq_env, awq_what = awq_variant()
    cases = {**COLD_VARIANTS, "awq": awq_spec}
    runs: dict[str, dict[str, list[dict]]] = {"without": {}, "with": {}}
    for round_no in range(rounds):
        for name, spec in cases.items():
            for mode in ("without", "with"):
                run = cold_and_warm(spec, awq_env if name == "awq" else {}, spares=mode == "with")
                runs[mode].setdefault(name, []).append(run)
                print(f"# round {round_no + 1}, {name}, {mode} spares: {json.dumps(run)}", flush=True)
    median = lambda mode, key: {name: round(statistics.median(r[key] for r in rs), 2)  # noqa: E731
                                for name, rs in runs[mode].items()}
    return {"cold_ttft_s": median("with", "s"), "warm_ttft_s": median("with", "warm_s"),
            "cold_ttft_s_without_spares": median("without", "s"),
            "warm_ttft_s_without_spares": median("without", "warm_s"),
            "start_to_ready_s": median("with", "start_to_ready"),
            "start_to_ready_s_without_spares": median("without", "start_to_ready"),
            "awq_variant": awq_what, "rounds": rounds, "load_average": os.getloadavg(), "runs": runs}


def print_cold_starts(figures: dict) -> None:
    """The table per engine and kind."""
    header = ("engine / kind", "cold, no spare", "cold, spare", "warm, no spare", "warm, spare", "start->ready no/with")
    print("lease to first token (s), median of {rounds} rounds; AWQ: {awq_variant}".format(**figures))
    print("  ".join(f"{h:>22}" for h in header))
    for name in figures["cold_ttft_s"]:
        row = (name, figures["cold_ttft_s_without_spares"][name], figures["cold_ttft_s"][name],
               figures["warm_ttft_s_without_spares"][name], figures["warm_ttft_s"][name],
               f"{figures['start_to_ready_s_without_spares'][name]:.2f} / {figures['start_to_ready_s'][name]:.2f}")
        print("  ".join(f"{cell:>22}" for cell in row))
    print("load average (1, 5, 15 min) at the end: {:.2f} {:.2f} {:.2f}".format(*figures["load_average"]))


def cold_start_json(figures: dict | None) -> dict:
    """The cold-start figures of the JSON object (null when not measured)."""
    keys = ("cold_ttft_s", "warm_ttft_s", "cold_ttft_s_without_spares", "warm_ttft_s_without_spares",
            "start_to_ready_s", "start_to_ready_s_without_spares", "awq_variant", "rounds", "load_average")
    return {("cold_rounds" if key == "rounds" else key): figures[key] if figures else None for key in keys}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--awq-model", choices=["smollm2", "tiny"], default="smollm2")
    parser.add_argument("--skip-awq", action="store_true")
    parser.add_argument("--only", choices=["ray", "coldstart"],
                        help="only the Ray figures (the others print as null), or only the cold starts")
    parser.add_argument("--ray-rounds", type=int, default=1, help="cold starts on each backend, interleaved")
    parser.add_argument("--cold-rounds", type=int, default=1, help="cold starts of each variant, each way")
    args = parser.parse_args()
    if args.only == "coldstart":
        cold = cold_start_figures(args.cold_rounds)
        print_cold_starts(cold)
        print(json.dumps(cold_start_json(cold)))
        return
    if args.only == "ray":
        print_figures(None, None, None, None, ray_figures(args.ray_rounds), args.awq_model, None)
        return
    folder = smollm2_folder()
    without = switch_time(folder, prewarm=False)
    print(f"# switch without prewarm: {without:.2f} s", flush=True)
    with_prewarm = switch_time(folder, prewarm=True)
    print(f"# switch with prewarm: {with_prewarm:.2f} s", flush=True)
    shared = same_model_generations(folder)
    print(f"# same-model generations: {json.dumps(shared)}", flush=True)
    knockout = tournaments(folder)
    print(f"# tournaments: {json.dumps(knockout)}", flush=True)
    awq = None if args.skip_awq else awq_cold_starts(args.awq_model)
    print(f"# awq cold starts ({args.awq_model}): {json.dumps(awq)}", flush=True)
    on_ray = ray_figures(args.ray_rounds)
    cold = cold_start_figures(args.cold_rounds)
    print_cold_starts(cold)
    print_figures((without, with_prewarm), shared, knockout, awq, on_ray, args.awq_model, cold)


def print_figures(switch: tuple[float, float] | None, shared: dict | None, knockout: dict | None, awq: dict | None,
                  on_ray: dict, awq_model: str, cold: dict | None) -> None:
    """The table, then the JSON object (the figures not measured in this run are null)."""
    rows = []
    if switch:
        rows += [("match switch, no prewarm (s)", f"{switch[0]:.2f}"),
                 ("match switch, prewarmed (s)", f"{switch[1]:.2f}")]
    if shared:
        rows += [(f"{GENERATIONS} generations of one cold model: served / workers",
                  f"{shared['served']} / {shared['workers']}"),
                 ("  first / last granted after (s)", f"{shared['first_grant_s']:.1f} / {shared['last_grant_s']:.1f}")]
    if knockout:
        rows += [(f"{TOURNAMENTS} tournaments at once, 2-model budget: finished",
                  f"{knockout['finished']}/{TOURNAMENTS}"),
                 ("  first matches granted in arrival order", str(knockout["fair_order"])),
                 ("  wall time (s)", f"{knockout['wall_s']:.1f}")]
    if awq:
        rows += [(f"AWQ cold start, first/quantising ({awq_model}) (s)", f"{awq['first_s']:.1f}"),
                 ("AWQ cold start, from the cache (s)", f"{awq['cached_s']:.1f}")]
    rows += [("llama.cpp cold start, lease to first token, local (s)", f"{on_ray['local_cold_start_s']:.2f}"),
             ("  the same on Ray, head + 1 node (s)", f"{on_ray['ray_cold_start_s']:.2f}"),
             ("  Ray over local" + (" (median of the rounds')" if on_ray["rounds"] > 1 else ""),
              f"{on_ray['ratio']:.2f}"),
             ("Ray node removed -> first token on another node (s)", f"{on_ray['failover_s']:.2f}"),
             ("  its worker seen failed after (s)", f"{on_ray['failed_after_s']:.2f}"),
             ("  a new worker started after (s)", f"{on_ray['restarted_after_s']:.2f}")]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(json.dumps({
        "prewarm_switch_ratio": round(switch[1] / switch[0], 3) if switch else None,
        "awq_cached_vs_first_cold_start": round(awq["cached_s"] / awq["first_s"], 4) if awq else None,
        "awq_model": awq_model if awq else None,
        "same_model_generations": shared["served"] if shared else None,
        "workers_for_same_model": shared["workers"] if shared else None,
        "concurrent_tournaments": knockout["started"] if knockout else None,
        "concurrent_tournaments_finished": knockout["finished"] if knockout else None,
        "tournaments_fair_order": knockout["fair_order"] if knockout else None,
        "ray_vs_local_cold_start": round(on_ray["ratio"], 3),
        "ray_cold_start_s": round(on_ray["ray_cold_start_s"], 2),
        "local_cold_start_s": round(on_ray["local_cold_start_s"], 2),
        "ray_failover_s": round(on_ray["failover_s"], 2),
        "ray_rounds": on_ray["rounds"],
        **cold_start_json(cold),
    }))


if __name__ == "__main__":
    main()
