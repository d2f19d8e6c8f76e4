"""Loading a catalogue variant into memory: one adapter per worker kind.

GGUF weights are dequantised by transformers, which is slow (and so is converting
the GGUF tokenizer), and users wait for cold starts: the converted model and
tokenizer are therefore saved once in an on-disk cache (`ARENA_MODEL_CACHE`,
default ~/.cache/llm-arena/models) and loaded from there afterwards.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference import config

# Nothing may be downloaded at run time; transformers reads this when imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

from inference.hardware import resident_mb
from inference.protocol import KINDS, PRECISIONS, ModelSpec
from inference.sources import ModelSourceError, model_cache_root, resolve_source

log = logging.getLogger(__name__)

FALLBACK_CONTEXT_LENGTH = 2048
_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


class ModelLoadError(Exception):
    """A model that could not be loaded; the message is meant for a user."""


@dataclass
class LoadedModel:
    tokenizer: Any
    model: PreTrainedModel
    device: torch.device
    dtype: torch.dtype
    context_length: int
    weight_bytes: int  # the draft's included
    load_s: float
    kind: str = "full"
    draft: PreTrainedModel | None = None  # speculative kind: the draft model (None: prompt lookup)
    num_speculative_tokens: int = 0  # 0: the engine's default
    base: bool = False  # a base model: prompts as plain text, never a chat template


# Where slow one-time steps (GGUF conversion, AWQ quantisation) say how far they are,
# besides the log: a worker forwards these lines to its status so users see them.
Progress = Callable[[str], None]
_progress_hook: Progress | None = None


def set_progress_hook(hook: Progress | None) -> None:
    global _progress_hook
    _progress_hook = hook


def report_progress(line: str) -> None:
    log.info("%s", line)
    if _progress_hook is not None:
        try:
            _progress_hook(line)
        except Exception:  # a broken progress sink must not fail the load
            log.exception("Progress hook failed")


# kind -> function(spec, weights path, device, dtype) -> (tokenizer, model), or
# (tokenizer, model, draft) for a kind that also loads a draft model.
Adapter = Callable[[ModelSpec, Path, torch.device, torch.dtype], tuple[Any, ...]]
ADAPTERS: dict[str, Adapter] = {}


def register_adapter(kind: str) -> Callable[[Adapter], Adapter]:
    def register(adapter: Adapter) -> Adapter:
        ADAPTERS[kind] = adapter
        return adapter

    return register


def load(spec: ModelSpec) -> LoadedModel:
    """Load `spec` on the best local device; raise ModelLoadError with a readable reason."""
    started = time.perf_counter()
    adapter = _adapter_for(spec.kind)
    device = pick_device()
    dtype = pick_dtype(spec.precision, device)
    try:
        weights = resolve_source(spec.source, spec.gguf_file)
        tokenizer, model, *rest = adapter(spec, weights, device, dtype)
        draft = rest[0] if rest else None
    except (ModelSourceError, ModelLoadError) as exc:
        raise ModelLoadError(str(exc)) from exc
    except Exception as exc:  # transformers raises many types; the user needs the gist
        raise ModelLoadError(f"{type(exc).__name__}: {_first_line(exc)}") from exc
    return LoadedModel(
        tokenizer=tokenizer,
        model=model,
        device=device,
        dtype=dtype,
        context_length=context_length_of(spec, model, tokenizer),
        weight_bytes=weight_bytes_of(model) + (weight_bytes_of(draft) if draft is not None else 0),
        load_s=time.perf_counter() - started,
        kind=spec.kind,
        draft=draft,
        num_speculative_tokens=spec.num_speculative_tokens,
        base=spec.base,
    )


def _adapter_for(kind: str) -> Adapter:
    if kind in ADAPTERS:
        return ADAPTERS[kind]
    if kind in KINDS:
        supported = ", ".join(sorted(ADAPTERS))
        raise ModelLoadError(f"Model kind '{kind}' is not supported by this worker yet (supported: {supported}).")
    raise ModelLoadError(f"Unknown model kind '{kind}' (known kinds: {', '.join(KINDS)}).")


def pick_device() -> torch.device:
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def pick_dtype(precision: str, device: torch.device) -> torch.dtype:
    """fp32 on CPU (fast kernels, no accuracy loss), bf16 on GPUs that have it, else fp16."""
    if precision in _DTYPES:
        return _DTYPES[precision]
    if precision not in PRECISIONS:
        raise ModelLoadError(f"Unknown precision '{precision}' (known: {', '.join(PRECISIONS)}).")
    if device.type != "cuda":
        return torch.float32
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


@register_adapter("full")
def load_full(spec: ModelSpec, weights: Path, device: torch.device, dtype: torch.dtype):
    if weights.suffix.lower() == ".gguf":
        tokenizer, model = load_gguf_cached(weights, dtype)
    else:
        tokenizer, model = load_folder(weights, dtype)
    return tokenizer, model.to(device).eval()


@register_adapter("speculative")
def load_speculative(spec: ModelSpec, weights: Path, device: torch.device, dtype: torch.dtype):
    """The target as "full" loads it, plus the draft when one is named (else: prompt lookup)."""
    tokenizer, model = load_full(spec, weights, device, dtype)
    if not spec.draft_source.strip():
        return tokenizer, model, None
    if spec.draft_kind == "speculative":
        raise ModelLoadError("A draft model cannot itself be speculative: choose 'full' (or another kind) for it.")
    draft_spec = dataclasses.replace(
        spec,
        slug=f"{spec.slug}-draft",
        source=spec.draft_source,
        gguf_file=spec.draft_gguf_file,
        kind=spec.draft_kind,
        draft_source="",
        draft_gguf_file="",
    )
    draft_weights = resolve_source(draft_spec.source, draft_spec.gguf_file)
    draft_tokenizer, draft, *_ = _adapter_for(draft_spec.kind)(draft_spec, draft_weights, device, dtype)
    check_same_vocabulary(tokenizer, draft_tokenizer, spec.draft_source)
    return tokenizer, model, draft


@register_adapter("awq")
def load_awq(spec: ModelSpec, weights: Path, device: torch.device, dtype: torch.dtype):
    """AWQ 4-bit (inference/awq.py), imported here so this module works without GPTQModel."""
    from inference.awq import load_awq as load_awq_weights

    return load_awq_weights(spec, weights, device, dtype)


def check_same_vocabulary(tokenizer, draft_tokenizer, draft_source: str) -> None:
    """A draft proposes token ids, so its ids must mean what the target's mean."""
    target_vocab, draft_vocab = tokenizer.get_vocab(), draft_tokenizer.get_vocab()
    if target_vocab != draft_vocab:
        differing = len(set(target_vocab.items()) ^ set(draft_vocab.items()))
        raise ModelLoadError(
            f"The draft model '{draft_source}' does not share the target's tokenizer "
            f"({len(draft_vocab)} tokens against {len(target_vocab)}, {differing} entries differ); "
            "a draft must use exactly the same vocabulary."
        )


def load_folder(folder: Path, dtype: torch.dtype):
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, local_files_only=True)
    return tokenizer, model


def load_gguf_cached(gguf_path: Path, dtype: torch.dtype):
    """Load a GGUF model through the converted-model cache, filling it on a miss."""
    root = model_cache_root()
    entry = root / cache_key(gguf_path)
    if (entry / "config.json").is_file():
        try:
            return load_folder(entry, dtype)
        except Exception as exc:  # a damaged entry must not keep the model from loading
            log.warning("Discarding unreadable model cache entry %s: %s", entry, exc)
            shutil.rmtree(entry, ignore_errors=True)
    report_progress(f"Converting {gguf_path.name} once; later starts load the converted copy")
    tokenizer, model = load_gguf(gguf_path)
    try:
        save_converted(tokenizer, model, entry)
    except OSError as exc:
        log.warning("Could not write the model cache at %s (%s); the next start will convert again", entry, exc)
        return tokenizer, model.to(dtype)
    # Reloading from the fresh entry is fast and gives a model without the GGUF config.
    return load_folder(entry, dtype)


def load_gguf(gguf_path: Path):
    """Dequantise a GGUF file to fp32 (slow: this is what the cache avoids)."""
    folder, name = gguf_path.parent, gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32, local_files_only=True)
    return tokenizer, model


def save_converted(tokenizer, gguf_model: PreTrainedModel, entry: Path) -> None:
    """Save a GGUF-loaded model as a plain checkpoint, atomically (tmp folder + rename).

    A GGUF-loaded model refuses save_pretrained because its config names the GGUF
    quantisation, so its weights move (without copying) into a model built from the
    config minus `quantization_config`.
    """
    config_dict = gguf_model.config.to_dict()
    config_dict.pop("quantization_config", None)
    plain_config = type(gguf_model.config).from_dict(config_dict)
    with torch.device("meta"):
        plain = AutoModelForCausalLM.from_config(plain_config, dtype=torch.float32)
    plain.load_state_dict(gguf_model.state_dict(), assign=True, strict=True)
    plain.tie_weights()
    plain.generation_config = gguf_model.generation_config

    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry.parent / f".tmp-{entry.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        plain.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        try:
            os.rename(tmp, entry)
        except OSError:
            if not (entry / "config.json").is_file():  # not a concurrent writer winning the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def cache_key(gguf_path: Path) -> str:
    """Names one converted file by its content: any change to the file (or the converter) misses.

    Content, not path and mtime, so a reinstall of the same package (a new venv, a
    CI clone) finds the work done before: hashing ~100 MB costs a fraction of a second.
    """
    converter = ".".join(transformers.__version__.split(".")[:2])
    identity = f"{file_digest(gguf_path)}|{gguf_path.name}|transformers {converter}"
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return f"{gguf_path.stem}-{digest}"


def file_digest(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def context_length_of(spec: ModelSpec, model: PreTrainedModel, tokenizer) -> int:
    """The spec's context if set (never beyond what the model was trained for), else the model's."""
    text_config = model.config.get_text_config()
    model_max = getattr(text_config, "max_position_embeddings", None)
    if not model_max:
        tokenizer_max = getattr(tokenizer, "model_max_length", None) or 0
        model_max = tokenizer_max if 0 < tokenizer_max < 10**7 else FALLBACK_CONTEXT_LENGTH
    if spec.context_length > 0:
        return min(spec.context_length, model_max)
    return int(model_max)


def memory_footprint_mb(loaded: LoadedModel) -> float:
    """What this worker holds once loaded, plus room for its KV cache: the orchestrator's measured figure.

    Resident memory on a CPU (weights, libraries, buffers), reserved CUDA memory on a GPU.
    """
    cuda = loaded.device.type == "cuda"
    held = torch.cuda.memory_reserved(loaded.device) / 2**20 if cuda else resident_mb()
    tokens = config.current().kv_reserve_tokens
    return held + kv_bytes_per_token(loaded.model, loaded.dtype) * tokens / 2**20


def kv_bytes_per_token(model: PreTrainedModel, dtype: torch.dtype) -> int:
    config = model.config.get_text_config()
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return 2 * config.num_hidden_layers * heads * head_dim * torch.finfo(dtype).bits // 8


def weight_bytes_of(model: torch.nn.Module) -> int:
    tensors = list(model.parameters()) + list(model.buffers())
    return sum(t.numel() * t.element_size() for t in tensors)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else "no details"
