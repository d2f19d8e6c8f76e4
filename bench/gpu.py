"""The GPU figures of the transformers engine, side by side in one run; one JSON line last.

Needs a CUDA device, torch and transformers (>= the version in pyproject), plus this repo's
inference/ and the few packages it imports (docs/performance.md, "On a GPU", says which and
how to bring them to a machine that has only torch). Model weights are random: tokens/s does
not depend on them, and a GPU machine here cannot download any. Every row is greedy, runs to
its full length (end-of-sequence ignored) and is timed after a warm-up.

- smollm2: SmolLM2-135M-Instruct's shape (its config and tokenizer: --smollm2 DIR, saved from
  the packaged GGUF by `python bench/gpu.py --save-smollm2 DIR` on a machine that has it), bf16.
  Decode tokens/s of one stream: ours (captured steps), ours eager (the same decoder, steps not
  captured) and transformers' generate() with a static cache (which it compiles), on the same
  prompt; their ratios.
- llama8b: an 8B Llama shape (hidden 4096, 32 layers, GQA 8, vocab 128256), bf16: the device's
  copy bandwidth (a 4 GiB copy, bytes read and written), the weight-read limit (bytes read per
  token: every weight but the input embedding table, of which a step reads one row per row),
  ours single stream against it, 16 and 32 concurrent requests' aggregate tokens/s (prefill
  included) against one alone, and the decoder's start (slots allocated and steps captured),
  first in the process and again.
- identity: the captured steps' greedy tokens against Engine.stream's, fp32, 1, 3 and 5 rows
  (tests/inference/test_gpu.py runs the same check).
- llama8b also runs transformers' own continuous batching (`generate_batch`) on the same 16 and
  32 requests.
- speculative: the real SmolLM2 (the packaged GGUF; prompt lookup accepts nothing from random
  weights), prompt lookup with its verify passes captured, compiled, and eager, against the
  plain worker's captured steps; skipped where the GGUF is not installed.
- awq: measured only where GPTQModel is installed; otherwise the reason.

Usage: python bench/gpu.py [--smollm2 DIR] [--skip-8b] [--only SECTIONS] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from inference.batched_decoder import BatchedDecoder
from inference.chunks import Finish, TokenChunk
from inference.decode_step import GraphStep
from inference.engine import Engine
from inference.protocol import SamplingParams

SMOLLM2_DIR = Path(__file__).resolve().parent.parent / ".gpu" / "smollm2"
LLAMA_8B: dict[str, Any] = {
    "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192, "rope_theta": 500000.0,
    "tie_word_embeddings": False}
PROMPT = [{"role": "user", "content": "Write a short story about a lighthouse keeper who finds a message in a bottle."}]


SPECULATIVE_NEW_TOKENS = 200
DEVICE = "cuda"  # tests/inference/test_gpu.py's CPU smoke run sets "cpu"


def _sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def random_model(config, dtype: torch.dtype):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    with torch.device(DEVICE):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    return model.eval()


def engine_for(tokenizer, model, context: int) -> Engine:
    engine = Engine(tokenizer, model, context_length=context)
    engine.eos_ids = frozenset()  # random weights: run every row to its length
    return engine


def run_rows(decoder: BatchedDecoder, prompts: list[list[int]], new_tokens: int) -> dict:
    """Decode `prompts` together to `new_tokens` each: per-row decode rate, aggregate rate."""
    params = SamplingParams(temperature=0.0, max_new_tokens=new_tokens)
    _sync()
    started = time.perf_counter()
    rows = [decoder.join(prompt, params, tag=i)[0] for i, prompt in enumerate(prompts)]
    counts = [0] * len(prompts)
    while len(decoder):
        for row, chunk in decoder.step():
            if isinstance(chunk, TokenChunk):
                counts[row.tag] += 1
            assert not isinstance(chunk, Finish) or chunk.reason in ("length", "stop"), chunk
    wall = time.perf_counter() - started
    decode = [(r.generated - 1) / (cast(float, r.last_token_time) - cast(float, r.first_token_time)) for r in rows]
    return {"rows": len(prompts), "tokens": sum(counts), "wall_s": round(wall, 3),
            "aggregate_tok_s": round(sum(counts) / wall, 1), "decode_tok_s_median": round(statistics.median(decode), 1)}


def best_single(decoder: BatchedDecoder, prompt: list[int], new_tokens: int, rounds: int = 3) -> float:
    return max(run_rows(decoder, [prompt], new_tokens)["decode_tok_s_median"] for _ in range(rounds))


class _Stamps:
    """A generate() streamer noting when each new token arrives."""

    def __init__(self):
        self.times: list[float] = []
        self.first = True

    def put(self, value):
        if self.first:  # the prompt
            self.first = False
            return
        self.times.append(time.perf_counter())

    def end(self):
        """generate() calls it once the answer ends: the times are already noted."""


def hf_static_generate(model, ids: torch.Tensor, new_tokens: int, rounds: int = 3) -> dict:
    """transformers' generate() with a static cache: decode tokens/s after its compiling first call."""
    kwargs = {"max_new_tokens": new_tokens, "min_new_tokens": new_tokens, "do_sample": False,
                  "cache_implementation": "static", "attention_mask": torch.ones_like(ids)}
    started = time.perf_counter()
    model.generate(ids, **kwargs)
    first_call = time.perf_counter() - started
    rates = []
    for _ in range(rounds):
        stamps = _Stamps()
        model.generate(ids, streamer=stamps, **kwargs)
        rates.append((len(stamps.times) - 1) / (stamps.times[-1] - stamps.times[0]))
    return {"decode_tok_s": round(max(rates), 1), "first_call_s": round(first_call, 1)}


def hf_generate_batch(model, prompt: list[int], rows: int, new_tokens: int) -> dict:
    """transformers' own continuous batching (paged attention, its CUDA graphs) on `rows` copies
    of `prompt`: aggregate tokens/s of its second call on a kept manager (the first warms up and
    captures; without a kept manager every call captures again, which the first run of this
    bench timed by mistake)."""
    from transformers import GenerationConfig
    from transformers.generation.configuration_utils import ContinuousBatchingConfig

    generation = GenerationConfig(max_new_tokens=new_tokens, do_sample=False, eos_token_id=-1, pad_token_id=0)
    batching = ContinuousBatchingConfig(max_memory_percent=0.3)
    walls = []
    for _ in range(2):
        _sync()
        started = time.perf_counter()
        outputs = model.generate_batch([prompt] * rows, generation_config=generation,
                                       continuous_batching_config=batching, persistent_manager=True)
        _sync()
        walls.append(time.perf_counter() - started)
    model.destroy_cached_continuous_batching_manager()
    tokens = sum(len(output.generated_tokens) for output in outputs.values())
    return {"rows": rows, "tokens": tokens, "first_call_s": round(walls[0], 1),
            "aggregate_tok_s": round(tokens / walls[1], 1)}


def replay_ms(decoder: BatchedDecoder, rows: int = 1, span: int = 256) -> float | None:
    """GPU time of one replayed step (rows, span), back to back: the step without our host work."""
    step = decoder._step
    if not isinstance(step, GraphStep):
        return None
    graph = step.graphs[(rows, span)][0]
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    start.record()
    for _ in range(50):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return round(start.elapsed_time(end) / 50, 3)


def timed_decoder(engine: Engine, **kwargs) -> tuple[BatchedDecoder, float]:
    started = time.perf_counter()
    decoder = BatchedDecoder(engine, max_rows=32, **kwargs)
    return decoder, round(time.perf_counter() - started, 2)


def smollm2(folder: Path) -> dict:
    from transformers import AutoConfig, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = random_model(AutoConfig.from_pretrained(folder), torch.bfloat16)
    engine = engine_for(tokenizer, model, 2048)
    prompt = engine.encode(PROMPT)
    new = 256
    out: dict = {"new_tokens": new}
    hf = hf_static_generate(model, torch.tensor([prompt], device="cuda"), new)
    out.update(hf_static_tok_s=hf["decode_tok_s"], hf_static_first_call_s=hf["first_call_s"])
    for name, kwargs in (("eager", {"graphs": False}), ("graphs", {}), ("compiled", {"compiled": True})):
        decoder, start_s = timed_decoder(engine, **kwargs)
        rate = best_single(decoder, prompt, new)
        out[name] = {"tok_s": rate, "vs_hf_static": round(rate / hf["decode_tok_s"], 3), "start_s": start_s,
                     "replay_ms": replay_ms(decoder), "step": decoder.step_kind}
        if name != "eager":
            out[name]["batch16"] = run_rows(decoder, [prompt] * 16, 64)
        del decoder
        torch.cuda.empty_cache()
    return out


def start_only(folder: Path) -> None:
    """A fresh process's start of the 8B shape's compiled decoder (inductor's disk cache as left)."""
    from transformers import AutoTokenizer, LlamaConfig

    engine = engine_for(AutoTokenizer.from_pretrained(folder), random_model(LlamaConfig(**LLAMA_8B), torch.bfloat16),
                        2048)
    decoder, start_s = timed_decoder(engine, compiled=True)
    print(json.dumps({"start_s": start_s, "step": decoder.step_kind}))


def copy_bandwidth_gbs() -> float:
    src = torch.empty(4 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(2):
        dst.copy_(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        dst.copy_(src)
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1000 / 10
    del src, dst
    torch.cuda.empty_cache()
    return 2 * (4 << 30) / seconds / 1e9


def llama8b(folder: Path) -> dict:
    from transformers import AutoTokenizer, LlamaConfig

    tokenizer = AutoTokenizer.from_pretrained(folder)
    bandwidth = copy_bandwidth_gbs()
    started = time.perf_counter()
    model = random_model(LlamaConfig(**LLAMA_8B), torch.bfloat16)
    torch.cuda.synchronize()
    build_s = time.perf_counter() - started
    total = sum(p.numel() * p.element_size() for p in model.parameters())
    embedding = model.get_input_embeddings().weight
    per_token = total - embedding.numel() * embedding.element_size()
    limit = bandwidth * 1e9 / per_token
    engine = engine_for(tokenizer, model, 2048)
    prompt = engine.encode(PROMPT)
    out = {"weight_bytes": total, "bytes_read_per_token": per_token, "copy_gbs": round(bandwidth, 0),
           "weight_read_limit_tok_s": round(limit, 1), "random_init_s": round(build_s, 1)}
    for name, kwargs in (("graphs", {}), ("compiled", {"compiled": True})):
        decoder, start_s = timed_decoder(engine, **kwargs)
        single = best_single(decoder, prompt, 128, rounds=2)
        out[name] = {"single_tok_s": single, "single_vs_limit": round(single / limit, 3), "start_s": start_s,
                     "replay_ms": replay_ms(decoder), "step": decoder.step_kind}
        alone = run_rows(decoder, [prompt], 64)
        out[name]["alone_64"] = alone
        for rows in (16, 32):
            together = run_rows(decoder, [prompt] * rows, 64)
            out[name][f"batch{rows}"] = together
            out[name][f"batch{rows}_vs_single"] = round(together["aggregate_tok_s"] / alone["aggregate_tok_s"], 2)
        del decoder
        torch.cuda.empty_cache()
    for rows in (16, 32) if os.environ.get("BENCH_HF_BATCH") != "0" else ():  # transformers' own batching
        try:
            theirs = hf_generate_batch(model, prompt, rows, 64)
            ours = out["compiled"].get(f"batch{rows}") or out["graphs"][f"batch{rows}"]
            theirs["ours_vs_theirs"] = round(ours["aggregate_tok_s"] / theirs["aggregate_tok_s"], 2)
            out[f"hf_generate_batch{rows}"] = theirs
        except Exception as exc:  # its API moves between minor versions: report, go on
            out[f"hf_generate_batch{rows}"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        torch.cuda.empty_cache()
    del engine, model
    torch.cuda.empty_cache()
    warm = subprocess.run([sys.executable, __file__, "--start-only", "--smollm2", str(folder)],
                          capture_output=True, text=True, timeout=300)
    lines = warm.stdout.strip().splitlines()
    out["compiled_start_again_process"] = json.loads(lines[-1]) if warm.returncode == 0 and lines else {
        "error": warm.stderr[-500:]}
    return out


def identity_of(folder: Path, kwargs: dict) -> dict:
    """Greedy tokens of captured steps (fp32) against Engine.stream alone, for 1, 3 and 5 rows."""
    from transformers import AutoTokenizer, LlamaConfig

    tokenizer = AutoTokenizer.from_pretrained(folder)
    config = LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=8,
                         num_key_value_heads=2, vocab_size=len(tokenizer), max_position_embeddings=1024)
    engine = engine_for(tokenizer, random_model(config, torch.float32), 1024)
    topics = ["Hi", "Tell me about the sea and its storms.", "What is 2+2?", "Name a colour.", "Why is the sky blue?"]
    prompts = [engine.encode([{"role": "user", "content": t}]) for t in topics]
    params = SamplingParams(temperature=0.0, max_new_tokens=24)
    decoder = BatchedDecoder(engine, max_rows=8, **kwargs)
    results = {}
    for count in (1, 3, 5):
        tokens: dict[int, list[int]] = {}
        for i in range(count):
            decoder.join(prompts[i], params, tag=i)
        while len(decoder):
            for row, chunk in decoder.step():
                if isinstance(chunk, TokenChunk):
                    tokens.setdefault(row.tag, []).append(chunk.token_id)
        alone = [[c.token_id for c in engine.stream(prompts[i], params) if isinstance(c, TokenChunk)]
                 for i in range(count)]
        results[f"rows{count}"] = all(tokens[i] == alone[i] for i in range(count))
    return {"identical": all(results.values()), **results, "step": decoder.step_kind}


def identity(folder: Path) -> dict:
    """Greedy tokens of captured steps (fp32), plain and compiled, against Engine.stream alone."""
    return {"graphs": identity_of(folder, {}), "compiled": identity_of(folder, {"compiled": True})}


def speculative() -> dict:
    """The real SmolLM2 (the packaged GGUF, bf16 on the GPU) on bench/speculative.py's grounded
    prompts: decode tokens/s of prompt-lookup speculative decoding, its verify passes captured
    (the GPU default) and eager over a DynamicCache (before), against the plain worker's path
    (the batch's captured steps, one stream); acceptance; greedy tokens against the plain ones."""
    from bench.speculative import PROMPTS
    from inference.loading import load
    from inference.protocol import ModelSpec
    from inference.sources import PACKAGED_SMOLLM2, resolve_source
    from inference.speculative import SpeculativeEngine

    try:
        resolve_source(*PACKAGED_SMOLLM2)
    except Exception as exc:
        return {"skipped": f"the packaged SmolLM2 GGUF is not on this machine ({exc})"[:300]}
    loaded = load(ModelSpec(slug="smollm2-spec", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1],
                            kind="speculative"))
    plain = Engine.from_loaded(loaded)
    engines: dict[str, Any] = {}
    for name, kwargs in (("spec_eager", {"slots": False}), ("spec_graphs", {}), ("spec_compiled", {"compiled": True})):
        started = time.perf_counter()
        engines[name] = SpeculativeEngine(loaded.tokenizer, loaded.model, loaded.context_length, **kwargs)
        engines[name].start_s = round(time.perf_counter() - started, 2)
    decoder = BatchedDecoder(plain, max_rows=1)
    params = SamplingParams(temperature=0.0, max_new_tokens=SPECULATIVE_NEW_TOKENS)
    out: dict = {"dtype": str(next(loaded.model.parameters()).dtype), "plain_step": decoder.step_kind}
    for prompt_name, text in PROMPTS.items():
        ids = plain.encode([{"role": "user", "content": text}])
        reference = [c.token_id for c in plain.stream(ids, params) if isinstance(c, TokenChunk)]
        rates = [run_rows(decoder, [ids], SPECULATIVE_NEW_TOKENS)["decode_tok_s_median"] for _ in range(3)]
        row: dict = {"prompt_tokens": len(ids), "plain_graphs_tok_s": max(rates)}
        for name, engine in engines.items():
            best = None
            for _ in range(3):
                chunks = list(engine.stream(ids, params))
                finish = chunks[-1]
                rate = (finish.generated_tokens - 1) / (finish.last_token_time - finish.first_token_time)
                if best is None or rate > best[0]:
                    best = (rate, [c.token_id for c in chunks if isinstance(c, TokenChunk)], finish)
            assert best is not None
            rate, tokens, finish = best
            row[name] = {"tok_s": round(rate, 1), "vs_plain_graphs": round(rate / max(rates), 2),
                         "acceptance": round(finish.accepted_tokens / max(1, finish.proposed_tokens), 3),
                         "identical_to_plain": tokens == reference, "start_s": engine.start_s,
                         "step": engine.step_kind}
        out[prompt_name] = row
    return out


def awq() -> dict:
    import shutil

    try:
        import gptqmodel  # noqa: F401
    except ImportError:
        return {"skipped": "GPTQModel is not installed on this machine: it has no binary wheel (its CUDA "
                           "kernels build from source)", "nvcc": shutil.which("nvcc")}
    return {"skipped": "AWQ on the captured path is not measured by this bench yet"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--smollm2", type=Path, default=SMOLLM2_DIR)
    parser.add_argument("--skip-8b", action="store_true")
    parser.add_argument("--only", help="comma-separated sections to run (identity,smollm2,llama8b,speculative,awq)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--save-smollm2", type=Path, help="save the packaged SmolLM2's config and tokenizer here")
    parser.add_argument("--start-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.start_only:
        start_only(args.smollm2)
        return
    if args.save_smollm2:
        save_smollm2(args.save_smollm2)
        return
    if not torch.cuda.is_available():
        sys.exit("bench/gpu.py needs a CUDA device")
    import transformers

    # A fresh inductor cache: the first compiled start is a cold one; the process started again
    # (llama8b's compiled_start_again_process) finds what it left.
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-")
    result: dict = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                    "transformers": transformers.__version__}
    sections = (("identity", lambda: identity(args.smollm2)), ("smollm2", lambda: smollm2(args.smollm2)),
                ("llama8b", None if args.skip_8b else lambda: llama8b(args.smollm2)), ("speculative", speculative),
                ("awq", awq))
    only = set(args.only.split(",")) if args.only else None
    for name, measure in sections:
        if measure is None or (only is not None and name not in only):
            continue
        started = time.perf_counter()
        try:
            result[name] = measure()
        except Exception as exc:  # one part failing still reports the others
            result[name] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        result[name]["section_s"] = round(time.perf_counter() - started, 1)
        print(name, json.dumps(result[name]), flush=True)
        torch.cuda.empty_cache()
    line = json.dumps(result)
    if args.out:
        args.out.write_text(line + "\n")
    print(line)


def save_smollm2(folder: Path) -> None:
    from transformers import AutoConfig, AutoTokenizer

    from inference.sources import PACKAGED_SMOLLM2, resolve_source

    gguf = resolve_source(*PACKAGED_SMOLLM2)
    AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(folder)
    AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(folder)


if __name__ == "__main__":
    main()
