"""Cores as a budget: do a comparison's two sides each get their half of the node?

Real worker processes under a real orchestrator (bench/orchestration.py's harness), the
packaged SmolLM2 on the transformers engine (fp32), greedy, `--tokens` new tokens:
- solo: one worker allowed every core (ARENA_CPU_SHARES=1) decoding alone;
- pair, shared: two workers started with the default ARENA_CPU_SHARES=2 (each pinned to its
  half of the cores) decoding at the same time, as a comparison's two sides do;
- pair, unshared: the same two with ARENA_CPU_SHARES=1 (both on every core, as before).

Last line, JSON: shared_pair_vs_half_solo = the slower shared side's tokens/s over half the
solo figure (goal >= 0.8), unshared_pair_vs_half_solo the same without shares, and the speeds.
Usage: python bench/cores.py [--tokens 96]
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.orchestration import MODEL_MB, Harness, smollm2_folder, variants
from inference.hardware import usable_cpus
from inference.protocol import SamplingParams


def decode_speed(h: Harness, worker_id: str, tokens: int, out: dict, key: str) -> None:
    """One greedy generation of `tokens` on `worker_id`: its decode tokens/s as the worker measured."""
    done = h.generate(worker_id, SamplingParams(temperature=0.0, max_new_tokens=tokens))
    out[key] = done["metrics"]["decode_tokens_per_s"]


def run(folder: str, shares: int, sides: int, tokens: int) -> list[float]:
    """Tokens/s of each of `sides` workers decoding at the same time."""
    specs = variants(folder, sides)
    with Harness(budget_mb=sides * MODEL_MB + 100, env={"ARENA_CPU_SHARES": str(shares)}) as h:
        workers = h.acquire("bench-cores", specs)
        for spec in specs:  # warm each up alone (first-call allocations) before timing them together
            decode_speed(h, workers[spec.slug], 8, {}, "warm")
        speeds: dict = {}
        threads = [threading.Thread(target=decode_speed, args=(h, workers[s.slug], tokens, speeds, s.slug))
                   for s in specs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
        h.release("bench-cores")
    return [round(speeds[s.slug], 2) for s in specs]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=96)
    args = parser.parse_args(argv)
    folder = smollm2_folder()
    (solo,) = run(folder, shares=1, sides=1, tokens=args.tokens)
    shared = run(folder, shares=2, sides=2, tokens=args.tokens)
    unshared = run(folder, shares=1, sides=2, tokens=args.tokens)
    half = solo / 2
    print(f"cores: {len(usable_cpus())}; SmolLM2 transformers fp32, greedy, {args.tokens} tokens")
    print(f"solo, every core:                  {solo:.2f} tok/s")
    print(f"pair at once, a share each:        {shared} tok/s")
    print(f"pair at once, both on every core:  {unshared} tok/s")
    print(json.dumps({
        "shared_pair_vs_half_solo": round(min(shared) / half, 3),
        "unshared_pair_vs_half_solo": round(min(unshared) / half, 3),
        "solo_tokens_per_s": solo, "shared_pair_tokens_per_s": shared, "unshared_pair_tokens_per_s": unshared,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
