"""AWQ 4-bit against full precision and round-to-nearest 4-bit, on the packaged SmolLM2-135M-Instruct.

Needs GPTQModel (see inference/awq.py). Reports: the AWQ load on this run (a
quantisation when the cache was empty: run with ARENA_MODEL_CACHE set to an empty
folder to time one), a cached load, greedy decode tokens/s of AWQ
and fp32 through `Engine` (best of ROUNDS interleaved runs; (generated - 1) / decode
time, as the worker reports it), weight bytes, and perplexity on three texts (the shipped
evaluation text, not the calibration one, and two that ship with the machine: CPython's and
Debian's licences) of fp32, RTN with the same bits and group size (asymmetric and symmetric
min-max), float-zero RTN at group 32 and its fp16 form, which is the packaged GGUF's own Q4_1
(it re-encodes the dequantised "fp32" weights bit for bit: the count is printed), and AWQ
twice: as served (GPTQModel's fused
CPU kernel, which computes in bf16) and with its 4-bit weights dequantised into fp32
layers (the quantisation alone, as RTN is measured). Also times one layer's int4
kernel against the fp32 matrix-vector product it replaces, which is what bounds the
decode speed-up on a CPU. Prints a table, then one JSON object as its last line.
Usage: python bench/awq.py [max_new_tokens]
"""

from __future__ import annotations

import copy
import json
import logging
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from inference.awq import AwqSettings
from inference.chunks import Finish
from inference.engine import Engine
from inference.loading import load
from inference.protocol import ModelSpec, SamplingParams
from inference.quality import EVALUATION_TEXT, evaluation_texts, perplexity, rtn_quantize_
from inference.sources import PACKAGED_SMOLLM2

ROUNDS = 3
# Round-to-nearest baselines (inference.quality.rtn_quantize_). The packaged SmolLM2 is a Q4_1
# GGUF, so "fp32" is a dequantised 4-bit model: the float-zero grid of 32 with fp16 scale and
# min is llama.cpp's Q4_1 itself and re-encodes those weights exactly (same perplexity as fp32).
RTN_VARIANTS = {
    "rtn_asym": {"bits": 4, "group_size": 64},
    "rtn_sym": {"bits": 4, "group_size": 64, "symmetric": True},
    "rtn_float_zero_g32": {"bits": 4, "group_size": 32, "float_zero": True},
    "q4_1_reencoded": {"bits": 4, "group_size": 32, "float_zero": True, "scale_dtype": torch.float16},
}
PROMPT = "Explain in a few paragraphs why the sky is blue, and why sunsets are red."


def decode_rate(loaded, max_new_tokens: int) -> float:
    engine = Engine.from_loaded(loaded)
    ids = engine.encode([{"role": "user", "content": PROMPT}])
    params = SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens)
    finish = next(c for c in engine.stream(ids, params) if isinstance(c, Finish))
    return (finish.generated_tokens - 1) / (finish.last_token_time - finish.first_token_time)


def dequantized_copy(model: torch.nn.Module) -> torch.nn.Module:
    """`model` with every AWQ layer replaced by an fp32 Linear holding its dequantised weights.

    Must run before the AWQ model's first forward (the fused kernel repacks on it).
    """
    copy_ = copy.deepcopy(model)
    for parent in list(copy_.modules()):
        for name, child in list(parent.named_children()):
            if hasattr(child, "awq_weight_dequantize"):
                # fp32 on a CPU; on a GPU the dtype the rest of the model computes in
                device = child.qweight.device
                dtype = torch.float32 if device.type == "cpu" else child.scales.dtype
                weight = child.awq_weight_dequantize(device=device, dtype=dtype)  # [in, out]
                linear = torch.nn.Linear(child.in_features, child.out_features, bias=child.bias is not None,
                                         device=device, dtype=dtype)
                linear.weight.data = weight.t().contiguous()
                if child.bias is not None:
                    linear.bias.data = child.bias.to(dtype)
                setattr(parent, name, linear)
    return copy_


def kernel_vs_dense(awq_layer, dense_layer: torch.nn.Linear, calls: int = 300) -> dict:
    """Seconds per call for one token through one AWQ layer and through the dense Linear it
    replaces (fp32 on a CPU, bf16 on a GPU: what the full-precision model runs)."""
    times = {}
    with torch.inference_mode():
        for name, layer in (("awq", awq_layer), ("fp32", dense_layer)):
            x = _probe_input(layer, dense_layer.in_features)
            layer(x)  # the AWQ kernel repacks on its first call
            _sync(x.device)
            started = time.perf_counter()
            for _ in range(calls):
                layer(x)
            _sync(x.device)
            times[name] = (time.perf_counter() - started) / calls
    return times


def _probe_input(layer, features: int) -> torch.Tensor:
    """One token's activations, on the layer's device in the dtype it computes in."""
    if hasattr(layer, "qweight"):
        device = layer.qweight.device
        dtype = torch.float32 if device.type == "cpu" else layer.scales.dtype
    else:
        device, dtype = layer.weight.device, layer.weight.dtype
    return torch.randn(1, features, device=device, dtype=dtype)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed_load(spec: ModelSpec):
    started = time.perf_counter()
    loaded = load(spec)
    return loaded, time.perf_counter() - started


def main(max_new_tokens: int = 128) -> dict:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    source, gguf = PACKAGED_SMOLLM2
    settings = AwqSettings.from_env()
    full, full_load_s = timed_load(ModelSpec(slug="smollm2", source=source, gguf_file=gguf))
    awq_spec = ModelSpec(slug="smollm2-awq", source=source, gguf_file=gguf, kind="awq")
    _, first_awq_load_s = timed_load(awq_spec)  # quantises when the cache is empty
    awq, cached_load_s = timed_load(awq_spec)
    awq_weights_fp32 = dequantized_copy(awq.model)
    layer_times = kernel_vs_dense(awq.model.model.layers[0].mlp.up_proj, full.model.model.layers[0].mlp.up_proj)

    rates: dict[str, list[float]] = {"fp32": [], "awq": []}
    for _ in range(ROUNDS):
        rates["fp32"].append(decode_rate(full, max_new_tokens))
        rates["awq"].append(decode_rate(awq, max_new_tokens))

    texts = evaluation_texts()
    models = {"fp32": full.model, "awq": awq.model, "awq_weights_fp32": awq_weights_fp32}
    exact: dict[str, list[int]] = {}
    for name, rtn_args in RTN_VARIANTS.items():
        models[name] = copy.deepcopy(full.model)
        exact[name] = list(rtn_quantize_(models[name], **rtn_args))
    ppl = {name: {text_name: perplexity(model, full.tokenizer, text) for text_name, text in texts.items()}
           for name, model in models.items()}

    result = {
        "bits": settings.bits,
        "group_size": settings.group_size,
        "full_load_s": full_load_s,
        "first_awq_load_s": first_awq_load_s,
        "cached_awq_load_s": cached_load_s,
        "decode_tokens_per_s": {k: max(v) for k, v in rates.items()},
        "awq_speedup": max(rates["awq"]) / max(rates["fp32"]),
        "weight_bytes": {"fp32": full.weight_bytes, "awq": awq.weight_bytes},
        "up_proj_s_per_token": layer_times,
        "kernel_vs_fp32_linear_speed": layer_times["fp32"] / layer_times["awq"],
        "perplexity": {name: by_text[EVALUATION_TEXT.name] for name, by_text in ppl.items()},  # the shipped text
        "perplexity_by_text": ppl,
        # below 1.0: AWQ keeps more of the model than round-to-nearest at the same bits and group
        # size; on the shipped evaluation text, and on each text (the worst one counts)
        "awq_vs_rtn_perplexity": ppl["awq"][EVALUATION_TEXT.name] / ppl["rtn_asym"][EVALUATION_TEXT.name],
        "awq_vs_rtn_perplexity_by_text": {t: ppl["awq"][t] / ppl["rtn_asym"][t] for t in texts},
        # Linear weights a variant stores bit for bit: the Q4_1 re-encoding of the dequantised GGUF
        "rtn_exact_weights": {name: f"{e}/{n}" for name, (n, e) in exact.items()},
        "evaluation_texts": list(texts),
        "max_new_tokens": max_new_tokens,
    }
    print(f"first AWQ load {first_awq_load_s:.1f} s (a quantisation if the cache was empty), "
          f"cached {cached_load_s:.1f} s")
    print(f"{'':18} {'tok/s':>8} {'weights MB':>11} " + " ".join(f"{t[:14]:>14}" for t in texts))
    for name in ppl:
        rate = result["decode_tokens_per_s"].get(name)
        size = result["weight_bytes"].get(name)
        print(f"{name:18} {f'{rate:.1f}' if rate else '':>8} {f'{size / 1e6:.1f}' if size else '':>11} "
              + " ".join(f"{ppl[name][t]:14.3f}" for t in texts))
    print(f"AWQ perplexity / RTN (asymmetric, same group) perplexity: {result['awq_vs_rtn_perplexity_by_text']} "
          "(below 1: better)")
    print(f"weights stored bit for bit: {result['rtn_exact_weights']}")
    print(f"one layer (mlp.up_proj, 1 token): AWQ kernel {layer_times['awq'] * 1e6:.0f} us, "
          f"fp32 Linear {layer_times['fp32'] * 1e6:.0f} us")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 128)
