"""AWQ 4-bit against full precision and round-to-nearest 4-bit, on the packaged SmolLM2-135M-Instruct.

Needs GPTQModel (see inference/awq.py). Reports: the AWQ load on this run (a
quantisation when the cache was empty: run with ARENA_MODEL_CACHE set to an empty
folder to time one), a cached load, greedy decode tokens/s of AWQ
and fp32 through `Engine` (best of ROUNDS interleaved runs; (generated - 1) / decode
time, as the worker reports it), weight bytes, and perplexity on the shipped
evaluation text (not the calibration text) of fp32, RTN with the same bits and group
size (asymmetric and symmetric min-max), and AWQ twice: as served (GPTQModel's fused
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
from inference.quality import EVALUATION_TEXT, perplexity, rtn_quantize_
from inference.sources import PACKAGED_SMOLLM2

ROUNDS = 3
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

    text = EVALUATION_TEXT.read_text()
    ppl = {
        "fp32": perplexity(full.model, full.tokenizer, text),
        "awq": perplexity(awq.model, awq.tokenizer, text),
        "awq_weights_fp32": perplexity(awq_weights_fp32, awq.tokenizer, text),
    }
    for symmetric in (False, True):
        rtn = copy.deepcopy(full.model)
        rtn_quantize_(rtn, settings.bits, settings.group_size, symmetric=symmetric)
        ppl["rtn_sym" if symmetric else "rtn_asym"] = perplexity(rtn, full.tokenizer, text)
        del rtn

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
        "perplexity": ppl,
        # below 1.0: AWQ keeps more of the model than round-to-nearest at the same bits and group size
        "awq_vs_rtn_perplexity": ppl["awq"] / ppl["rtn_asym"],
        "evaluation_text": EVALUATION_TEXT.name,
        "max_new_tokens": max_new_tokens,
    }
    print(f"first AWQ load {first_awq_load_s:.1f} s (a quantisation if the cache was empty), "
          f"cached {cached_load_s:.1f} s")
    print(f"{'':10} {'tok/s':>8} {'weights MB':>11} {'perplexity':>11}")
    for name in ("fp32", "awq"):
        rate, size = result["decode_tokens_per_s"][name], result["weight_bytes"][name] / 1e6
        print(f"{name:10} {rate:8.1f} {size:11.1f} {ppl[name]:11.3f}")
    for name in ("awq_weights_fp32", "rtn_asym", "rtn_sym"):
        print(f"{name:10} {'':8} {'':11} {ppl[name]:11.3f}")
    print(f"AWQ perplexity / RTN (asymmetric) perplexity: {result['awq_vs_rtn_perplexity']:.3f} (below 1: better)")
    print(f"one layer (mlp.up_proj, 1 token): AWQ kernel {layer_times['awq'] * 1e6:.0f} us, "
          f"fp32 Linear {layer_times['fp32'] * 1e6:.0f} us")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 128)
