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
  one's first match is granted in the order the tournaments asked).

Prints a table, then one JSON object as its last line.
Usage: python bench/orchestration.py [--awq-model smollm2|tiny] [--skip-awq]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import redis
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from inference import protocol as p
from inference.loading import cache_key, load_gguf_cached, model_cache_root
from inference.protocol import Job, Keys, ModelSpec, SamplingParams
from inference.sources import PACKAGED_SMOLLM2, resolve_source
from orchestration import client as orch
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


class Harness:
    """An orchestrator running in a thread under a private prefix; everything cleaned up on exit."""

    def __init__(self, budget_mb: float, env: dict[str, str] | None = None):
        self.prefix = f"bench-orch-{uuid.uuid4().hex[:8]}"
        self.keys = Keys(self.prefix)
        self.redis = redis.Redis.from_url(REDIS_URL)
        self.logs = tempfile.mkdtemp(prefix="bench-orch-logs-")
        backend = LocalBackend(REDIS_URL, self.prefix, Path(self.logs), env=env, budget_mb=budget_mb)
        self.orchestrator = Orchestrator(backend, self.redis, self.keys, Config(keep_alive_s=600))
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

    def generate(self, worker_id: str, params: SamplingParams = SHORT) -> dict:
        """One generation on `worker_id` (short by default), waited for to its end: its DONE event."""
        job = Job(uuid.uuid4().hex, PROMPT, params)
        self.redis.rpush(self.keys.worker_jobs(worker_id), job.to_json())
        stream, last = self.keys.stream(job.generation_id), "0-0"
        while True:
            for _, entries in self.redis.xread({stream: last}, block=1000) or []:
                for entry_id, fields in entries:
                    last = entry_id
                    event = p.parse_event(fields)
                    if event["type"] in p.TERMINAL_EVENTS:
                        if event["type"] != p.DONE:
                            raise RuntimeError(f"generation {event['type']}: {event.get('reason')}")
                        return event


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--awq-model", choices=["smollm2", "tiny"], default="smollm2")
    parser.add_argument("--skip-awq", action="store_true")
    args = parser.parse_args()
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
    rows = [
        ("match switch, no prewarm (s)", f"{without:.2f}"),
        ("match switch, prewarmed (s)", f"{with_prewarm:.2f}"),
        (f"{GENERATIONS} generations of one cold model: served / workers", f"{shared['served']} / {shared['workers']}"),
        ("  first / last granted after (s)", f"{shared['first_grant_s']:.1f} / {shared['last_grant_s']:.1f}"),
        (f"{TOURNAMENTS} tournaments at once, 2-model budget: finished", f"{knockout['finished']}/{TOURNAMENTS}"),
        ("  first matches granted in arrival order", str(knockout["fair_order"])),
        ("  wall time (s)", f"{knockout['wall_s']:.1f}"),
    ]
    if awq:
        rows += [(f"AWQ cold start, first/quantising ({args.awq_model}) (s)", f"{awq['first_s']:.1f}"),
                 ("AWQ cold start, from the cache (s)", f"{awq['cached_s']:.1f}")]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(json.dumps({
        "prewarm_switch_ratio": round(with_prewarm / without, 3),
        "awq_cached_vs_first_cold_start": round(awq["cached_s"] / awq["first_s"], 4) if awq else None,
        "awq_model": args.awq_model if awq else None,
        "same_model_generations": shared["served"],
        "workers_for_same_model": shared["workers"],
        "concurrent_tournaments": knockout["started"],
        "concurrent_tournaments_finished": knockout["finished"],
        "tournaments_fair_order": knockout["fair_order"],
    }))


if __name__ == "__main__":
    main()
