"""The "awq" worker kind: AWQ 4-bit weights, through GPTQModel.

AutoAWQ is deprecated and does not work with transformers 5, which loads AWQ
through GPTQModel; GPTQModel also quantises. A source that already is an AWQ
checkpoint is loaded as it is. Any other source (a folder, or a GGUF file by way of
loading.py's converted-model cache) is quantised once, with the calibration text
shipped in inference/data, into `model_cache_root()/awq/<key>`, and that entry is
loaded from then on. Quantising a 135M model takes a few minutes on two CPU cores
(awq_search.py: ~50 s a layer before it, ~5-10 s after), so progress goes through
loading.report_progress (the log, and the worker's status), and `make run` quantises
missing entries in the background at start (arena/catalogue/preparation.py); one
process at a time per entry (entry_lock), the others wait for its result.

GPTQModel is optional: this module imports without it, and loading an awq spec
without it fails with a readable ModelLoadError.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import time
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from inference import awq_search, config
from inference.loading import (
    ModelLoadError,
    Progress,
    cache_key,
    load_gguf_cached,
    model_cache_root,
    pick_device,
    report_progress,
)
from inference.protocol import ModelSpec
from inference.sources import resolve_source

log = logging.getLogger(__name__)

DATA_DIR = Path(__file__).resolve().parent / "data"
CALIBRATION_TEXT = DATA_DIR / "calibration.txt"
CPU_BACKEND = "torch_fused_awq"  # the fused CPU kernel; the default one JIT-compiles for a minute, torch_awq crawls
LOCK_POLL_S = 1.0  # how often a process waiting for another's quantisation looks at the lock and its progress
LAYER_LINE = "AWQ: quantised layer {done}/{layers} ({percent}%)"
_LAYER_PATTERN = re.compile(r"AWQ: quantised layer (\d+)/(\d+)")
BY_ANOTHER_PROCESS = "(by another process)"  # appended to the progress lines a waiting process passes on
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
    # with GPTQModel's bf16 search, 20.0 with the fp32 one of awq_search.py (RTN 24.3); all 15
    # windows of the text, the last one short, gave 26.7 (which of the two differences matters
    # was not separated). The search's cost grows with the tokens: 4 x 512 take ~10 s of CPU a layer.
    max_samples: int = 4

    @classmethod
    def from_env(cls) -> AwqSettings:
        """Defaults, overridable per deployment with ARENA_AWQ_BITS / ARENA_AWQ_GROUP_SIZE."""
        settings = config.current()
        return cls(bits=settings.awq_bits or cls.bits, group_size=settings.awq_group_size or cls.group_size)


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
    from transformers.utils.quantization_config import AwqBackend

    # On CPU the fused kernel; on a GPU GPTQModel picks the best kernel for the card.
    backend = AwqBackend(CPU_BACKEND) if device.type == "cpu" else AwqBackend.AUTO
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
    """The cache folder of `weights` quantised with `settings`, quantising on a miss.

    One process quantises an entry at a time (entry_lock): another that needs it
    meanwhile (a worker started while `make run`'s preparer quantises) waits, passing
    on the quantiser's progress, and then loads the result.
    """
    entry = cache_entry(weights, settings)
    if is_awq_checkpoint(entry):
        return entry
    with entry_lock(entry, report) as shared_report:
        if is_awq_checkpoint(entry):  # quantised by the process we waited for
            return entry
        _remove_leftovers(entry)
        full = full_precision_folder(weights)
        shared_report(f"AWQ: quantising {weights.name} to {settings.bits} bits (group {settings.group_size}) once; "
                      "later starts load the cache")
        started = time.perf_counter()
        quantize_into(full, entry, settings, device, shared_report)
        shared_report(f"AWQ: quantised in {time.perf_counter() - started:.0f} s")
    return entry


def _remove_leftovers(entry: Path) -> None:
    """Temporary folders of a quantiser of this entry that was killed (a stopped worker exits
    without cleaning up); with the entry's lock held, nobody else is writing them."""
    for leftover in entry.parent.glob(f".tmp-{entry.name}-*"):
        shutil.rmtree(leftover, ignore_errors=True)


def cache_entry(weights: Path, settings: AwqSettings) -> Path:
    return model_cache_root() / "awq" / awq_cache_key(weights, settings)


def prepare(spec: ModelSpec, report: Progress) -> Path:
    """Quantise `spec` into the cache if it is not there yet (`make run`'s preparer), without loading it."""
    require_gptqmodel()
    weights = resolve_source(spec.source, spec.gguf_file)
    if weights.is_dir() and is_awq_checkpoint(weights):
        return weights
    return quantized_entry(weights, AwqSettings.from_env(), pick_device(), report)


def needs_quantising(spec: ModelSpec) -> bool:
    """Whether loading `spec` would quantise first (False for an AWQ checkpoint source or a cached entry)."""
    require_gptqmodel()
    weights = resolve_source(spec.source, spec.gguf_file)
    if weights.is_dir() and is_awq_checkpoint(weights):
        return False
    return not is_awq_checkpoint(cache_entry(weights, AwqSettings.from_env()))


@contextlib.contextmanager
def entry_lock(entry: Path, report: Progress, poll_s: float = LOCK_POLL_S) -> Iterator[Progress]:
    """Hold the cache entry's lock file (fcntl, so a killed holder releases it), waiting for it if
    another process holds it. Yields the progress sink to quantise with: it also writes each line
    next to the lock, where a waiting process reads it and passes it on to its own user."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    shared = entry.with_name(f"{entry.name}.progress")
    with open(entry.with_name(f"{entry.name}.lock"), "a+b") as lock:
        if not _try_lock(lock):
            report("AWQ: another process is quantising this model; waiting for it")
            _wait_for_lock(lock, shared, report, poll_s)
        shared.unlink(missing_ok=True)  # a killed holder's last line

        def report_and_share(line: str) -> None:
            report(line)
            _write_atomically(shared, line)

        try:
            yield report_and_share
        finally:
            shared.unlink(missing_ok=True)
            fcntl.flock(lock, fcntl.LOCK_UN)


def _try_lock(lock) -> bool:
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _wait_for_lock(lock, shared: Path, report: Progress, poll_s: float) -> None:
    last = ""
    while not _try_lock(lock):
        try:
            line = shared.read_text()
        except FileNotFoundError:
            line = ""
        if line and line != last:
            report(f"{line} {BY_ANOTHER_PROCESS}")
            last = line
        time.sleep(poll_s)


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


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
            f"search {awq_search.method()}",
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
    fast = awq_search.method() == awq_search.FAST
    if not fast:
        log.warning("GPTQModel %s is not the version inference/awq_search.py patches; quantising its own (slower) way",
                    require_gptqmodel().__version__)
    try:
        config = AWQConfig(
            bits=settings.bits, group_size=settings.group_size, sym=settings.sym, offload_to_disk_path=str(offload)
        )
        with awq_search.fast_search() if fast else contextlib.nullcontext():
            dtype = {"dtype": awq_search.SEARCH_DTYPE} if fast else {}
            model = GPTQModel.load(str(full), config, device=str(device), **dtype)
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
            report(LAYER_LINE.format(done=done, layers=layers, percent=100 * done // layers))

    return layer_complete


def layer_progress(line: str) -> tuple[int, int] | None:
    """(layers done, layers in all) from a progress line of a quantisation, else None."""
    match = _LAYER_PATTERN.search(line)
    return (int(match[1]), int(match[2])) if match else None
