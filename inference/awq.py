"""The "awq" worker kind: AWQ 4-bit weights, through GPTQModel.

AutoAWQ is deprecated and does not work with transformers 5, which loads AWQ
through GPTQModel; GPTQModel also quantises. A source that already is an AWQ
checkpoint is loaded as it is. Any other source (a folder, or a GGUF file by way of
loading.py's converted-model cache) is quantised once, with the calibration text
shipped in inference/data, into `model_cache_root()/awq/<key>`, and that entry is
loaded from then on. Quantising a 135M model takes minutes on two CPU cores, so
progress goes through loading.report_progress (the log, and the worker's status).

GPTQModel is optional: this module imports without it, and loading an awq spec
without it fails with a readable ModelLoadError.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from inference.loading import ModelLoadError, Progress, cache_key, load_gguf_cached, model_cache_root, report_progress
from inference.protocol import ModelSpec

log = logging.getLogger(__name__)

DATA_DIR = Path(__file__).resolve().parent / "data"
CALIBRATION_TEXT = DATA_DIR / "calibration.txt"
CPU_BACKEND = "torch_fused_awq"  # the fused CPU kernel; the default one JIT-compiles for a minute, torch_awq crawls
NOT_INSTALLED = (
    "AWQ needs GPTQModel, which is not installed in this worker's environment "
    "(pip install gptqmodel, which needs torch>=2.14.1); choose the 'full' kind meanwhile."
)


@dataclass(frozen=True)
class AwqSettings:
    bits: int = 4
    group_size: int = 64
    sym: bool = False  # False: a zero point per group (AutoAWQ's zero_point=True), as AWQ is usually run
    calibration_text: Path = CALIBRATION_TEXT
    sample_tokens: int = 512  # the calibration text is cut into windows of this many tokens
    # Measured on SmolLM2 with GPTQModel 7.7: the first 4 full windows give perplexity 19.5
    # (RTN 24.3); all 15 windows of the text, the last one short, gave 26.7 (which of the
    # two differences matters was not separated).
    max_samples: int = 4

    @classmethod
    def from_env(cls) -> AwqSettings:
        """Defaults, overridable per deployment with ARENA_AWQ_BITS / ARENA_AWQ_GROUP_SIZE."""
        return cls(
            bits=int(os.environ.get("ARENA_AWQ_BITS", cls.bits)),
            group_size=int(os.environ.get("ARENA_AWQ_GROUP_SIZE", cls.group_size)),
        )


def load_awq(
    spec: ModelSpec,
    weights: Path,
    device: torch.device,
    dtype: torch.dtype,
    *,
    settings: AwqSettings | None = None,
    progress: Progress | None = None,
):
    """The loading adapter: (tokenizer, model) with AWQ 4-bit linear layers."""
    require_gptqmodel()
    report = progress or report_progress
    if weights.is_dir() and is_awq_checkpoint(weights):
        folder = weights
    else:
        folder = quantized_entry(weights, settings or AwqSettings.from_env(), device, report)
    return load_checkpoint(folder, device, dtype)


def require_gptqmodel():
    # A 2-core machine refuses GPTQModel's default thread pool ("parent 'cpu' only has 1").
    if (os.cpu_count() or 1) <= 2:
        os.environ.setdefault("GPTQMODEL_CPU_WORKERS", "2")
    try:
        import gptqmodel
    except ImportError as exc:
        raise ModelLoadError(NOT_INSTALLED) from exc
    return gptqmodel


def is_awq_checkpoint(folder: Path) -> bool:
    """GPTQModel writes quantize_config.json; transformers-style checkpoints say so in config.json."""
    for name, section in (("quantize_config.json", None), ("config.json", "quantization_config")):
        path = folder / name
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        config = data.get(section) if section else data
        if isinstance(config, dict) and "awq" in str(config.get("quant_method", config.get("method", ""))).lower():
            return True
    return False


def load_checkpoint(folder: Path, device: torch.device, dtype: torch.dtype):
    from transformers import AwqConfig

    # On CPU the fused kernel; on a GPU GPTQModel picks the best kernel for the card.
    backend = CPU_BACKEND if device.type == "cpu" else "auto"
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    with warnings.catch_warnings():
        # Overriding the checkpoint's backend is the point; transformers warns that it happens.
        warnings.filterwarnings("ignore", message="You passed `quantization_config`")
        model = AutoModelForCausalLM.from_pretrained(
            folder,
            quantization_config=AwqConfig(backend=backend),
            dtype=dtype,
            device_map=str(device),
            local_files_only=True,
        )
    return tokenizer, model.eval()


def quantized_entry(weights: Path, settings: AwqSettings, device: torch.device, report: Progress) -> Path:
    """The cache folder of `weights` quantised with `settings`, quantising on a miss."""
    entry = model_cache_root() / "awq" / awq_cache_key(weights, settings)
    if is_awq_checkpoint(entry):
        return entry
    full = full_precision_folder(weights)
    report(f"AWQ: quantising {weights.name} to {settings.bits} bits (group {settings.group_size}) once; later starts load the cache")
    started = time.perf_counter()
    quantize_into(full, entry, settings, device, report)
    report(f"AWQ: quantised in {time.perf_counter() - started:.0f} s")
    return entry


def full_precision_folder(weights: Path) -> Path:
    """A plain checkpoint folder of the full model: GPTQModel quantises from one."""
    if weights.suffix.lower() != ".gguf":
        return weights
    entry = model_cache_root() / cache_key(weights)
    if not (entry / "config.json").is_file():
        load_gguf_cached(weights, torch.float32)  # converts the GGUF and fills the entry
    if not (entry / "config.json").is_file():
        raise ModelLoadError(f"Could not write the converted model to {entry}, which AWQ quantisation needs.")
    return entry


def awq_cache_key(weights: Path, settings: AwqSettings) -> str:
    """Any change to the source, the settings, the calibration text or GPTQModel misses."""
    import gptqmodel

    calibration = hashlib.sha256(settings.calibration_text.read_bytes()).hexdigest()
    quantizer = ".".join(gptqmodel.__version__.split(".")[:2])
    identity = "|".join(
        [
            source_identity(weights),
            f"bits {settings.bits}",
            f"group {settings.group_size}",
            f"sym {settings.sym}",
            f"samples {settings.sample_tokens}x{settings.max_samples}",
            f"calibration {calibration}",
            f"gptqmodel {quantizer}",
        ]
    )
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return f"{weights.stem}-w{settings.bits}g{settings.group_size}-{digest}"


def source_identity(weights: Path) -> str:
    if weights.suffix.lower() == ".gguf":
        return cache_key(weights)
    files = sorted(p for p in weights.iterdir() if p.suffix in (".json", ".safetensors", ".bin") and p.is_file())
    stats = [f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files]
    return f"{weights.resolve()}|" + ",".join(stats)


def quantize_into(full: Path, entry: Path, settings: AwqSettings, device: torch.device, report: Progress) -> None:
    """Quantise the checkpoint in `full` with AWQ and save it at `entry`, atomically."""
    from gptqmodel import AWQConfig, GPTQModel

    tokenizer = AutoTokenizer.from_pretrained(full, local_files_only=True)
    samples = calibration_samples(tokenizer, settings)
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry.parent / f".tmp-{entry.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    # GPTQModel offloads finished layers to disk; its own temporary folder outlives the process.
    offload = tmp.with_name(f"{tmp.name}-offload")
    try:
        config = AWQConfig(
            bits=settings.bits, group_size=settings.group_size, sym=settings.sym, offload_to_disk_path=str(offload)
        )
        model = GPTQModel.load(str(full), config, device=str(device))
        model.layer_callback = _layer_reporter(model.model.config.get_text_config().num_hidden_layers, report)
        report(f"AWQ: calibrating on {len(samples)} samples of up to {settings.sample_tokens} tokens")
        model.quantize(samples, batch_size=1)
        model.save(str(tmp))
        tokenizer.save_pretrained(tmp)
        try:
            os.rename(tmp, entry)
        except OSError:
            if not is_awq_checkpoint(entry):  # not a concurrent quantiser winning the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(offload, ignore_errors=True)


def calibration_samples(tokenizer, settings: AwqSettings) -> list[dict[str, list[int]]]:
    """Consecutive token windows of the calibration text, all of `sample_tokens` tokens.

    A shorter tail is dropped (as in the measured configuration, see AwqSettings); only
    a text shorter than one window is used as one shorter sample.
    """
    ids = tokenizer(settings.calibration_text.read_text(), add_special_tokens=False).input_ids
    windows = [ids[i : i + settings.sample_tokens] for i in range(0, len(ids), settings.sample_tokens)]
    full = [w for w in windows if len(w) == settings.sample_tokens]
    windows = (full or [w for w in windows if len(w) >= 16])[: settings.max_samples]
    if not windows:
        raise ModelLoadError(f"The calibration text {settings.calibration_text} is too short for AWQ.")
    return [{"input_ids": w, "attention_mask": [1] * len(w)} for w in windows]


def _layer_reporter(layers: int, report: Progress):
    def layer_complete(layer_idx: int, submodule_finalized: bool) -> None:
        if not submodule_finalized:  # each layer is reported once, when its weights are quantised
            done = layer_idx + 1
            report(f"AWQ: quantised layer {done}/{layers} ({100 * done // layers}%)")

    return layer_complete
