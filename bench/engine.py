"""The inference engine against its anchors, measured side by side in one run.

On the packaged SmolLM2-135M-Instruct (fp32 on this CPU) and a fixed prompt set:
- ours_vs_hf_generate: single-stream decode tokens/s of our Engine over plain
  transformers `generate()` (greedy, the same prompts, best of interleaved rounds);
- spec_vs_full_decode / spec_greedy_identical: prompt-lookup speculative decoding over
  the plain Engine on input-grounded prompts (rewrite / summarise a given text);
- batch16_vs_batch1_throughput: aggregate tokens/s of 16 requests decoded together by
  the continuous-batching decoder over the same 16 run one at a time;
- awq_*: AWQ 4-bit (GPTQModel) against fp32 and round-to-nearest 4-bit, when
  GPTQModel is installed (bench/awq.py measures them); null with the reason otherwise;
- the llama.cpp and openai engines (bench/llamacpp.py), every engine on the same thread
  count (printed): llamacpp_vs_raw_llamacpp (our llama.cpp worker's single-stream decode over
  xllamacpp called directly on the same file), llamacpp_batch16_vs_raw (16 concurrent
  requests each way), openai_adapter_vs_direct (a worker with engine=openai over the same
  server read with the openai client), best_cpu_vs_transformers_fp32 (our fastest CPU entry
  over the transformers fp32 engine) and ours_vs_llamacpp (our best transformers kind over
  llama.cpp);
- compiled_vs_eager_decode: torch.compile over eager decoding of one stream, both on a static
  cache (bench/compiled.py at this run's thread count; its cold starts printed).

Decode tokens/s is (tokens - 1) / (last token time - first token time), as the worker
reports it. time_split: for each kind of our transformers engine measured here (single stream
greedy, speculative, the 16 requests one at a time and batched), milliseconds per generated
token, prefill included, split into the model's forward passes, sampling (TokenSampler.pick,
its read-back included) and the rest (our own overhead: detokenising, stop texts, cache joins,
bookkeeping); timed by hooks this bench installs around those runs only (CPU: no asynchronous
work hides in the split).

Prints a table, then one JSON object as its last line. `--only batch`: the batching figures only.
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.speculative import PROMPTS as GROUNDED_PROMPTS
from inference.batched_decoder import BatchedDecoder
from inference.chunks import Finish, TokenChunk
from inference.engine import Engine, TokenSampler
from inference.loading import load
from inference.protocol import ModelSpec, SamplingParams
from inference.sources import PACKAGED_SMOLLM2
from inference.speculative import SpeculativeEngine

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))  # best of interleaved rounds: the machine is shared
NEW_TOKENS = 128
OPEN_PROMPTS = [
    "Write a short story about a robot who learns to paint.",
    "Explain how a refrigerator works, step by step.",
    "Describe a walk through a forest in autumn.",
]
BATCH = 16
BATCH_TOKENS = 64
FULL = ModelSpec(slug="smollm2", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1])


def chat(engine, prompt: str) -> list[int]:
    return engine.encode([{"role": "user", "content": prompt}])


def engine_run(engine, ids, params) -> tuple[list[int], Finish]:
    tokens, finish = [], None
    for chunk in engine.stream(ids, params, lambda: False):
        if isinstance(chunk, TokenChunk):
            tokens.append(chunk.token_id)
        else:
            finish = chunk
    return tokens, finish


class TimeSplit:
    """Where the time of some runs went: model forward, sampling, the rest; per generated token.

    `with split:` times what runs inside it (hooks on the model, a wrapper around
    TokenSampler.pick); outside it nothing is timed, so hf generate() never counts.
    """

    def __init__(self, model):
        self.model = model
        self.forward_s = self.sampling_s = self.total_s = 0.0
        self.tokens = 0
        self._forward_start = 0.0
        self._entered = 0.0

    def __enter__(self):
        self._hooks = [self.model.register_forward_pre_hook(self._pre), self.model.register_forward_hook(self._post)]
        self._pick = TokenSampler.pick
        split = self

        def timed_pick(sampler, logits):
            started = time.perf_counter()
            try:
                return split._pick(sampler, logits)
            finally:
                split.sampling_s += time.perf_counter() - started

        TokenSampler.pick = timed_pick  # type: ignore[method-assign]
        self._entered = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.total_s += time.perf_counter() - self._entered
        TokenSampler.pick = self._pick  # type: ignore[method-assign]
        for hook in self._hooks:
            hook.remove()

    def _pre(self, *args):
        self._forward_start = time.perf_counter()

    def _post(self, *args):
        self.forward_s += time.perf_counter() - self._forward_start

    def per_token_ms(self) -> dict:
        if not self.tokens:
            return {}
        forward, sampling = self.forward_s, self.sampling_s
        return {key: round(value * 1000 / self.tokens, 3) for key, value in (
            ("total", self.total_s), ("forward", forward), ("sampling", sampling),
            ("overhead", self.total_s - forward - sampling))}


def rate(count: int, first: float, last: float) -> float:
    return (count - 1) / (last - first) if count > 1 and last > first else 0.0


class _TokenTimes:
    """A generate() streamer that only notes when each new token arrives."""

    def __init__(self):
        self.times: list[float] = []
        self._prompt_seen = False

    def put(self, value):
        if self._prompt_seen:
            self.times.append(time.time())
        self._prompt_seen = True

    def end(self):
        """generate() calls this once at the end; the times are already noted."""


def hf_rate(model, ids: list[int], max_new_tokens: int) -> float:
    streamer = _TokenTimes()
    with torch.inference_mode():
        model.generate(torch.tensor([ids]), max_new_tokens=max_new_tokens, do_sample=False, streamer=streamer)
    return rate(len(streamer.times), streamer.times[0], streamer.times[-1])


def ours_vs_hf(engine: Engine) -> dict:
    params = SamplingParams(temperature=0.0, max_new_tokens=NEW_TOKENS)
    ours, theirs, split = [], [], TimeSplit(engine.model)
    for prompt in OPEN_PROMPTS:
        ids = chat(engine, prompt)
        best_ours = best_hf = 0.0
        for _ in range(ROUNDS):  # interleaved: both see the same machine load
            with split:
                _, finish = engine_run(engine, ids, params)
            split.tokens += finish.generated_tokens
            best_ours = max(best_ours, rate(finish.generated_tokens, finish.first_token_time, finish.last_token_time))
            best_hf = max(best_hf, hf_rate(engine.model, ids, NEW_TOKENS))
        ours.append(best_ours)
        theirs.append(best_hf)
    return {"ours": statistics.mean(ours), "hf": statistics.mean(theirs), "split": split.per_token_ms()}


def speculative_vs_full(engine: Engine, spec_engine: SpeculativeEngine) -> dict:
    params = SamplingParams(temperature=0.0, max_new_tokens=NEW_TOKENS)
    full_rates, spec_rates, identical, acceptance = [], [], True, []
    split = TimeSplit(engine.model)
    for prompt in GROUNDED_PROMPTS.values():
        ids = chat(engine, prompt)
        best_full = best_spec = 0.0
        for _ in range(ROUNDS):
            ref, finish = engine_run(engine, ids, params)
            best_full = max(best_full, rate(finish.generated_tokens, finish.first_token_time, finish.last_token_time))
            with split:
                got, sfin = engine_run(spec_engine, ids, params)
            split.tokens += sfin.generated_tokens
            best_spec = max(best_spec, rate(sfin.generated_tokens, sfin.first_token_time, sfin.last_token_time))
            identical = identical and got == ref
            if sfin.proposed_tokens:
                acceptance.append(sfin.accepted_tokens / sfin.proposed_tokens)
        full_rates.append(best_full)
        spec_rates.append(best_spec)
    return {"full": statistics.mean(full_rates), "spec": statistics.mean(spec_rates), "identical": identical,
            "acceptance": statistics.mean(acceptance) if acceptance else None, "split": split.per_token_ms()}


def batch_throughput(engine: Engine) -> dict:
    """16 sampled requests one at a time, then the same 16 joined into one batch, best of
    interleaved rounds (the machine is shared)."""
    prompts = [f"Tell me fact number {i + 1} about the ocean, in a few sentences." for i in range(BATCH)]
    inputs = [chat(engine, p) for p in prompts]
    params = [SamplingParams(temperature=0.8, top_p=0.95, max_new_tokens=BATCH_TOKENS, seed=i) for i in range(BATCH)]
    single_rate = batch_rate = 0.0
    single_split, batch_split = TimeSplit(engine.model), TimeSplit(engine.model)
    for _ in range(max(1, ROUNDS - 1)):
        started = time.perf_counter()
        with single_split:
            one_at_a_time = sum(engine_run(engine, ids, p)[1].generated_tokens
                                for ids, p in zip(inputs, params, strict=True))
        single_rate = max(single_rate, one_at_a_time / (time.perf_counter() - started))
        single_split.tokens += one_at_a_time
        started = time.perf_counter()
        with batch_split:
            decoder, together = BatchedDecoder(engine), 0
            for ids, p in zip(inputs, params, strict=True):
                _row, chunks = decoder.join(ids, p)
                together += sum(isinstance(c, TokenChunk) for c in chunks)
            while len(decoder):
                together += sum(isinstance(chunk, TokenChunk) for _row, chunk in decoder.step())
        batch_rate = max(batch_rate, together / (time.perf_counter() - started))
        batch_split.tokens += together
    return {"batch1": single_rate, "batch16": batch_rate,
            "split": {"batch1": single_split.per_token_ms(), "batch16": batch_split.per_token_ms()}}


def awq_figures() -> dict:
    if importlib.util.find_spec("gptqmodel") is None:
        return {"reason": "GPTQModel is not installed in this environment (see bench/awq.py and the README)"}
    from bench import awq as awq_bench

    result = awq_bench.main(NEW_TOKENS)
    ppl, weights, rates = result["perplexity"], result["weight_bytes"], result["decode_tokens_per_s"]
    return {
        "awq_vs_full_decode": round(result["awq_speedup"], 3),
        "awq_vs_full_weight_bytes": round(weights["awq"] / weights["fp32"], 3),
        # RTN at the same bits and group size, asymmetric min-max like AWQ's zero points
        "awq_vs_rtn_perplexity": round(ppl["awq"] / ppl["rtn_asym"], 3),
        "full_perplexity": round(ppl["fp32"], 3),
        "awq_perplexity": round(ppl["awq"], 3),
        "rtn_perplexity": round(ppl["rtn_asym"], 3),
        "awq_kernel_vs_fp32_linear": round(result["kernel_vs_fp32_linear_speed"], 3),
        "awq_decode_tokens_per_s": rates["awq"],
    }


def llamacpp_figures(threads: int) -> dict:
    """bench/llamacpp.py in a process of its own (OpenMP as in our workers; see its docstring)."""
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("llamacpp.py")), str(threads)],
                         capture_output=True, text=True, check=True, timeout=1800)
    return json.loads(out.stdout.strip().splitlines()[-1])


def compiled_figures(threads: int) -> dict:
    """bench/compiled.py at this run's thread count, in processes of its own (cold starts)."""
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("compiled.py")), str(threads)],
                         capture_output=True, text=True, check=True, timeout=3600)
    return json.loads(out.stdout.strip().splitlines()[-1])[f"threads_{threads}"]


def progress(section: str, figures: dict) -> dict:
    """Each section's raw figures as soon as they are known (a long run is still useful if cut short)."""
    print(f"# {section}: {json.dumps(figures)}", flush=True)
    return figures


def ratio(a, b):
    return round(a / b, 3) if a and b else None


def main() -> None:
    loaded = load(FULL)
    engine = Engine.from_loaded(loaded)
    if sys.argv[1:3] == ["--only", "batch"]:
        batch = progress("batching", batch_throughput(engine))
        print(json.dumps({"batch16_vs_batch1_throughput": ratio(batch["batch16"], batch["batch1"]),
                          "time_split": batch["split"]}))
        return
    spec_engine = SpeculativeEngine(loaded.tokenizer, loaded.model, context_length=loaded.context_length)
    hf = progress("generate", ours_vs_hf(engine))
    spec = progress("speculative", speculative_vs_full(engine, spec_engine))
    batch = progress("batching", batch_throughput(engine))
    awq = progress("awq", awq_figures())
    threads = torch.get_num_threads()
    cpp = progress("llama.cpp", llamacpp_figures(threads))
    compiled = progress("torch.compile", compiled_figures(threads))
    best_transformers = max(hf["ours"], awq.get("awq_decode_tokens_per_s") or 0)
    best_cpu = max(best_transformers, cpp["ours_single"], cpp["adapter_single"])
    rows = [
        ("decode tok/s, our Engine (full fp32, greedy)", f"{hf['ours']:.2f}"),
        ("decode tok/s, transformers generate()", f"{hf['hf']:.2f}"),
        ("decode tok/s, full on input-grounded prompts", f"{spec['full']:.2f}"),
        ("decode tok/s, prompt-lookup speculative", f"{spec['spec']:.2f}"),
        ("speculative acceptance rate", f"{spec['acceptance']:.2f}" if spec["acceptance"] else "-"),
        ("aggregate tok/s, 16 requests one at a time", f"{batch['batch1']:.2f}"),
        ("aggregate tok/s, 16 requests batched", f"{batch['batch16']:.2f}"),
        ("AWQ", json.dumps(awq)),
        ("decode tok/s, xllamacpp called directly (Q4_1)", f"{cpp['raw_single']:.2f}"),
        ("decode tok/s, our llama.cpp worker (Q4_1)", f"{cpp['ours_single']:.2f}"),
        ("aggregate tok/s, 16 requests, xllamacpp directly", f"{cpp['raw_batch16']:.2f}"),
        ("aggregate tok/s, 16 requests, our llama.cpp worker", f"{cpp['ours_batch16']:.2f}"),
        ("aggregate tok/s, 1 request, xllamacpp / our worker",
         f"{cpp['raw_batch1']:.2f} / {cpp['ours_batch1']:.2f}"),
        ("decode tok/s, openai client on llama.cpp's server", f"{cpp['direct_openai_single']:.2f}"),
        ("decode tok/s, our openai-engine worker, same server", f"{cpp['adapter_single']:.2f}"),
        ("decode ms/token, eager / torch.compile (static cache)",
         f"{compiled['eager_ms_per_token']:.1f} / {compiled['compiled_ms_per_token']:.1f}"),
        ("compile cold start, empty / cached inductor cache",
         f"{compiled['cold_start_empty_cache_s']:.0f} s / {compiled['cold_start_cached_s']:.0f} s"),
        ("threads, every engine", str(threads)),
        ("llama.cpp's OpenMP wait policy (bench and workers)", cpp["omp_wait_policy"]),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(json.dumps({
        "awq_vs_full_decode": awq.get("awq_vs_full_decode"),
        "awq_vs_full_weight_bytes": awq.get("awq_vs_full_weight_bytes"),
        "awq_vs_rtn_perplexity": awq.get("awq_vs_rtn_perplexity"),
        "full_perplexity": awq.get("full_perplexity"),
        "awq_perplexity": awq.get("awq_perplexity"),
        "rtn_perplexity": awq.get("rtn_perplexity"),
        "awq_kernel_vs_fp32_linear": awq.get("awq_kernel_vs_fp32_linear"),
        "awq_unavailable": awq.get("reason"),
        "spec_vs_full_decode": ratio(spec["spec"], spec["full"]),
        "spec_greedy_identical": spec["identical"],
        "spec_acceptance_rate": round(spec["acceptance"], 3) if spec["acceptance"] else None,
        "batch16_vs_batch1_throughput": ratio(batch["batch16"], batch["batch1"]),
        "ours_vs_hf_generate": ratio(hf["ours"], hf["hf"]),
        "compiled_vs_eager_decode": compiled["compiled_vs_eager_decode"],
        "llamacpp_vs_raw_llamacpp": ratio(cpp["ours_single"], cpp["raw_single"]),
        "llamacpp_batch16_vs_raw": ratio(cpp["ours_batch16"], cpp["raw_batch16"]),
        "llamacpp_batch16_vs_batch1": ratio(cpp["ours_batch16"], cpp["ours_batch1"]),
        "raw_llamacpp_batch16_vs_batch1": ratio(cpp["raw_batch16"], cpp["raw_batch1"]),
        "openai_adapter_vs_direct": ratio(cpp["adapter_single"], cpp["direct_openai_single"]),
        "best_cpu_vs_transformers_fp32": ratio(best_cpu, hf["ours"]),
        "ours_vs_llamacpp": ratio(best_transformers, cpp["raw_single"]),
        "threads": threads,
        "time_split": {"single_greedy": hf["split"], "speculative": spec["split"], **batch["split"]},
    }))


if __name__ == "__main__":
    main()
