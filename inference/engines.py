"""Which engine serves a catalogue entry: the one place that maps a spec to what runs it.

    transformers -> inference.engine.Engine or SpeculativeEngine over a model loaded here
    llamacpp     -> llama.cpp called in this process (inference.llamacpp, inference.llamacpp_decoder)
    openai       -> an OpenAI-compatible endpoint elsewhere, read through inference.endpoint
    server       -> an OpenAI-compatible server started from the entry's command (inference.managed)

Only the transformers engine imports torch, so an endpoint's worker starts in a moment.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inference import config, destinations
from inference.decoding import WARM_UP_MESSAGES
from inference.endpoint import EndpointEngine
from inference.hardware import resident_mb, usable_cpus
from inference.llamacpp_decoder import LlamaCppEngine
from inference.protocol import ModelSpec

if TYPE_CHECKING:
    from inference.engine import Engine
    from inference.loading import LoadedModel


class EngineConfigError(Exception):
    """An entry this worker cannot serve as configured; the message is meant for a user."""


@dataclass
class Served:
    """An engine ready for jobs, and what the worker reports about it."""

    engine: Engine | EndpointEngine | LlamaCppEngine
    load_s: float
    context_length: int  # 0: the server's own, not known here
    weight_bytes: int
    memory_mb: float  # what the orchestrator should count for this worker
    keep: Any = None  # what must stay alive while serving (llama.cpp's server, a managed server)

    def close(self) -> None:
        """Stop what serving started (a managed server's process)."""
        close = getattr(self.keep, "close", None)
        if close is not None:
            close()


def serve(spec: ModelSpec, *, max_batch: int, progress: Callable[[str], None] | None = None) -> Served:
    """Load or reach `spec`'s model. Raises with a message meant for a user. `progress` hears
    how far a slow first load (a GGUF conversion, an AWQ quantisation) has got."""
    if spec.engine == "llamacpp":
        return _serve_llamacpp(spec, max_batch)
    if spec.engine == "openai":
        return _serve_endpoint(spec)
    if spec.engine == "server":
        return _serve_managed(spec, progress)
    if spec.engine != "transformers":
        raise EngineConfigError(f"Unknown engine '{spec.engine}'.")
    return _serve_transformers(spec, progress)


def worker_threads() -> int:
    """ARENA_WORKER_THREADS, else one thread per core this worker is pinned to (hardware.keep_to_cpus)."""
    return max(1, config.current().worker_threads or len(usable_cpus()))


def _serve_transformers(spec: ModelSpec, progress: Callable[[str], None] | None) -> Served:
    configure_torch()
    from inference.loading import load, memory_footprint_mb, set_progress_hook

    set_progress_hook(progress)
    loaded = load(spec)
    engine = build_engine(loaded)
    return Served(engine, loaded.load_s + warm_up(engine), loaded.context_length, loaded.weight_bytes,
                  memory_footprint_mb(loaded))


def warm_up(engine: Engine) -> float:
    """One one-token answer before the worker says it is ready (decoding.WARM_UP_MESSAGES: the first
    request's one-time costs belong to the load); its seconds."""
    from inference.protocol import SamplingParams

    started = time.perf_counter()
    for _chunk in engine.stream(engine.encode(WARM_UP_MESSAGES), SamplingParams(temperature=0.0, max_new_tokens=1)):
        pass
    return time.perf_counter() - started


def _serve_llamacpp(spec: ModelSpec, max_batch: int) -> Served:
    from inference import llamacpp

    parallel = spec.max_concurrency or max_batch
    server = llamacpp.start(spec, parallel=parallel, threads=worker_threads())
    return Served(server.engine, server.load_s, server.context_length, server.weight_bytes,
                  resident_mb(), keep=server)


def _serve_endpoint(spec: ModelSpec) -> Served:
    if not spec.base_url.startswith(("http://", "https://")):
        raise EngineConfigError(f"The endpoint's base URL must start with http:// or https:// (got '{spec.base_url}').")
    if not destinations.host_allowed(spec.base_url, destinations.parse_hosts(config.current().endpoint_hosts)):
        raise EngineConfigError(f"The endpoint's host is not one ARENA_ENDPOINT_HOSTS allows on this machine "
                                f"(got '{spec.base_url}').")
    key = ""
    if spec.api_key_sealed:
        key = config.current().endpoint_api_key
        if not key:
            raise EngineConfigError("This endpoint's stored API key did not reach the worker: the machine that "
                                    "started it could not open it (every node needs the app's ARENA_SECRETS_KEY).")
    elif spec.api_key_env:
        if not config.is_key_variable(spec.api_key_env):  # an entry saved before the prefix was the rule
            raise EngineConfigError(f"The key variable {spec.api_key_env} is not read: an endpoint's key comes only "
                                    f"from a variable named {config.KEY_VARIABLE_PREFIX}<NAME> (rename the variable, "
                                    "and the entry's API key variable).")
        key = config.secret(spec.api_key_env)
        if not key:
            raise EngineConfigError(f"The environment variable {spec.api_key_env}, which should hold this "
                                    "endpoint's API key, is not set where the worker runs.")
    engine = EndpointEngine(base_url=spec.base_url, model=spec.remote_model, api_key=key,
                            api_key_env=spec.api_key_env, base=spec.base, max_concurrency=spec.max_concurrency)
    # An endpoint holds no model here: it costs the node no memory.
    return Served(engine, load_s=0.0, context_length=spec.context_length, weight_bytes=0, memory_mb=0.0)


def _serve_managed(spec: ModelSpec, progress: Callable[[str], None] | None) -> Served:
    from inference import managed

    timeout_s = config.current().server_start_timeout_s
    server = managed.start(spec, timeout_s=timeout_s, progress=progress)
    return Served(server.engine, server.load_s, spec.context_length, weight_bytes=0,
                  memory_mb=server.memory_mb(), keep=server)


def build_engine(loaded: LoadedModel) -> Engine:
    """The transformers engine for `loaded` (every engine has encode / check_context / stream)."""
    from inference.engine import Engine
    from inference.speculative import SpeculativeEngine

    if loaded.kind == "speculative":  # its verify passes are captured on a GPU, as a batch's steps are
        settings = config.current()
        if settings.compile_decode:
            config.keep_compiled_artefacts(settings)
        return SpeculativeEngine.from_loaded(loaded, graphs=settings.cuda_graphs, compiled=settings.compile_decode)
    return Engine.from_loaded(loaded)


def configure_torch() -> None:
    import torch
    from transformers.utils import logging as transformers_logging

    torch.set_num_threads(worker_threads())
    transformers_logging.disable_progress_bar()  # bars fill worker logs with carriage returns
