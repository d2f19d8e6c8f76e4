"""torch.compile against eager decoding on this CPU, measured side by side in one process.

The packaged SmolLM2-135M (fp32), batch 1, greedy, both over transformers' StaticCache (the
compiled graph needs fixed shapes: a preallocated cache and cache positions), decoding the
same tokens. `compiled` is `torch.compile(model.forward, fullgraph=True, dynamic=False)`
(inductor's C++ kernels). Rounds alternate eager and compiled so both see the same machine
load. Cold start: the first compiled call, once with an empty inductor cache
(TORCHINDUCTOR_CACHE_DIR, a fresh directory) and once in a second process that finds the
first one's artefacts on disk (the "cached" cold start a worker would pay on each spin-up).

Usage: python bench/compiled.py [threads ...]   (default: 1 and 2). Last line: JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOKENS = 48
CACHE = 256
ROUNDS = 3


def measure(threads: int) -> dict:
    import torch
    from transformers import StaticCache

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from inference.loading import load
    from inference.protocol import ModelSpec
    from inference.sources import PACKAGED_SMOLLM2

    torch.set_num_threads(threads)
    loaded = load(ModelSpec(slug="smollm2", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1]))
    model = loaded.model.eval()
    ids = loaded.tokenizer("Write a short story about a robot who learns to paint.", return_tensors="pt")["input_ids"]

    def decode(forward) -> tuple[float, list[int]]:
        with torch.inference_mode():
            cache = StaticCache(config=model.config, max_cache_len=CACHE)
            length = ids.shape[1]
            out = model(input_ids=ids, cache=cache, cache_position=torch.arange(length), logits_to_keep=1)
            token = out.logits[:, -1].argmax(-1)
            tokens = [int(token)]
            started = time.perf_counter()
            for i in range(TOKENS):
                out = forward(input_ids=token.view(1, 1), cache=cache,
                              cache_position=torch.tensor([length + i]))
                token = out.logits[:, -1].argmax(-1)
                tokens.append(int(token))
            return (time.perf_counter() - started) * 1000 / TOKENS, tokens

    compiled = torch.compile(model.forward, fullgraph=True, dynamic=False)
    started = time.perf_counter()
    _, compiled_tokens = decode(compiled)
    cold_s = time.perf_counter() - started
    eager_ms, compiled_ms = [], []
    for _ in range(ROUNDS):
        ms, eager_tokens = decode(model.forward)
        eager_ms.append(ms)
        compiled_ms.append(decode(compiled)[0])
    return {"threads": threads, "eager_ms_per_token": round(min(eager_ms), 2),
            "compiled_ms_per_token": round(min(compiled_ms), 2),
            "compiled_vs_eager_decode": round(min(eager_ms) / min(compiled_ms), 3),
            "same_tokens": compiled_tokens == eager_tokens, "first_compiled_call_s": round(cold_s, 1)}


def in_process(threads: int, cache_dir: str) -> dict:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache_dir, "OMP_NUM_THREADS": str(threads)}
    out = subprocess.run([sys.executable, __file__, "--measure", str(threads)], env=env, capture_output=True,
                         text=True, check=True, timeout=3600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    if sys.argv[1:2] == ["--measure"]:
        print(json.dumps(measure(int(sys.argv[2]))))
        return
    figures = {}
    for threads in [int(t) for t in sys.argv[1:]] or [1, 2]:
        with tempfile.TemporaryDirectory(prefix="inductor-") as cache_dir:
            first = in_process(threads, cache_dir)
            cached = in_process(threads, cache_dir)
        figures[f"threads_{threads}"] = {**cached, "cold_start_empty_cache_s": first["first_compiled_call_s"],
                                         "cold_start_cached_s": cached["first_compiled_call_s"]}
        print(f"# {threads} thread(s): {json.dumps(figures[f'threads_{threads}'])}", flush=True)
    best = max(f["compiled_vs_eager_decode"] for f in figures.values())
    print(json.dumps({"compiled_vs_eager_decode": best, **figures}))


if __name__ == "__main__":
    main()
