"""Every environment variable of the project's own that inference/ reads, in one typed place.

`current()` reads the environment each time it is called, never at import: a worker's
environment comes from the orchestrator that started it, and a test's `monkeypatch.setenv`
must count. A number that does not parse is ignored with a warning (the default is used).
Third-party switches this package sets (HF_HUB_OFFLINE, OMP_WAIT_POLICY...) are set where they
matter, with `os.environ.setdefault`; they are not read here.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)
N = TypeVar("N", int, float)
D = TypeVar("D", int, float, None)

# Where a worker finds its entry's stored key: put in its environment by the backend that spawned
# it (orchestration/sealing.py), never on its command line or in Redis.
STORED_KEY_ENV = "ARENA_ENDPOINT_API_KEY"
# The only variables a catalogue entry may name as holding its endpoint's key: an entry sends the
# variable's value to its endpoint, so naming any variable of the process (HOME, a database
# password, a cloud credential) would send that. Names are case-sensitive, as the environment's.
KEY_VARIABLE_PREFIX = "ARENA_ENDPOINT_KEY_"
_KEY_VARIABLE = re.compile(re.escape(KEY_VARIABLE_PREFIX) + r"[A-Za-z0-9_]{1,100}")
# "1" lets catalogue entries of the "server" engine run their own command (inference/managed.py).
SERVER_COMMANDS_ENV = "ARENA_ALLOW_SERVER_COMMANDS"
# redis-py's option for each TLS file variable (inference/redis_connect.py).
REDIS_TLS_FILES = {"ARENA_REDIS_TLS_CA": "ssl_ca_certs", "ARENA_REDIS_TLS_CERT": "ssl_certfile",
                   "ARENA_REDIS_TLS_KEY": "ssl_keyfile"}


@dataclass(frozen=True)
class Config:
    """The inference side's settings, each with its variable and default."""

    redis_url: str = ""
    """REDIS_URL: the worker's Redis (a password stays off the command line)."""
    redis_tls: Mapping[str, str] = field(default_factory=dict)
    """ARENA_REDIS_TLS_CA / _CERT / _KEY: redis-py's TLS options for a rediss:// URL, those set."""
    worker_log_level: str = "INFO"
    """ARENA_WORKER_LOG_LEVEL: a worker's logging level."""
    worker_max_batch: int = 16
    """ARENA_WORKER_MAX_BATCH: generations a worker decodes together."""
    worker_max_queue: int = 32
    """ARENA_WORKER_MAX_QUEUE: jobs a worker takes on beyond its batch."""
    worker_threads: int | None = None
    """ARENA_WORKER_THREADS: torch/llama.cpp threads (unset or 0: one per core the worker is pinned to)."""
    worker_cpus: str = ""
    """ARENA_WORKER_CPUS: the cores ("0,1") the orchestrator gave this worker (unset: all)."""
    server_start_timeout_s: float = 600.0
    """ARENA_SERVER_START_TIMEOUT_S: how long a managed server may take to answer (unset or 0: 600)."""
    model_cache: Path = Path("~/.cache/llm-arena/models")
    """ARENA_MODEL_CACHE: where converted, quantised and assembled models are kept (`~` expanded)."""
    awq_bits: int | None = None
    """ARENA_AWQ_BITS: AWQ's bits per weight (unset: inference.awq.AwqSettings' default)."""
    awq_group_size: int | None = None
    """ARENA_AWQ_GROUP_SIZE: AWQ's weights per scale (unset: AwqSettings' default)."""
    kv_reserve_tokens: int = 8192
    """ARENA_KV_RESERVE_TOKENS: cached tokens a worker reserves room for, across its batch."""
    llamacpp_verbosity: int = 1
    """ARENA_LLAMACPP_VERBOSITY: llama.cpp's log verbosity."""
    cuda_graphs: bool = True
    """ARENA_CUDA_GRAPHS=0: a GPU worker runs its decode steps eagerly instead of replaying captured graphs."""
    compile_decode: bool = True
    """ARENA_COMPILE_DECODE=0: a GPU worker captures its decode steps without torch.compile'ing its layers
    first (by default it compiles them, about 10 s at start, and keeps, per batch size, whichever step
    replays faster; artefacts kept under ARENA_MODEL_CACHE/inductor; docs/performance.md)."""
    allow_server_commands: bool = False
    """ARENA_ALLOW_SERVER_COMMANDS=1: "server" entries may run their command."""
    endpoint_api_key: str = ""
    """ARENA_ENDPOINT_API_KEY: this worker's endpoint's stored key, opened by its backend."""
    endpoint_hosts: str = ""
    """ARENA_ENDPOINT_HOSTS: the only hosts (host or host:port, comma-separated) openai entries may
    point at, on the web side and in every worker (inference.destinations); unset: any host."""


def keep_compiled_artefacts(settings: Config) -> None:
    """torch.compile's on-disk cache under the model cache (unless TORCHINDUCTOR_CACHE_DIR says
    where): a worker started again reuses what the last one compiled."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(settings.model_cache / "inductor"))


def current(env: Mapping[str, str] | None = None) -> Config:
    """The settings in `env` (the process's environment by default), read now."""
    env = os.environ if env is None else env
    defaults = Config()
    return Config(
        redis_url=env.get("REDIS_URL", defaults.redis_url),
        redis_tls={option: env[name] for name, option in REDIS_TLS_FILES.items() if env.get(name)},
        worker_log_level=env.get("ARENA_WORKER_LOG_LEVEL") or defaults.worker_log_level,
        worker_max_batch=_number(env, "ARENA_WORKER_MAX_BATCH", int, defaults.worker_max_batch),
        worker_max_queue=_number(env, "ARENA_WORKER_MAX_QUEUE", int, defaults.worker_max_queue),
        worker_threads=_number(env, "ARENA_WORKER_THREADS", int, None),
        worker_cpus=env.get("ARENA_WORKER_CPUS", "").strip(),
        server_start_timeout_s=(_number(env, "ARENA_SERVER_START_TIMEOUT_S", float, None)
                                or defaults.server_start_timeout_s),
        model_cache=Path(env.get("ARENA_MODEL_CACHE") or defaults.model_cache).expanduser(),
        awq_bits=_number(env, "ARENA_AWQ_BITS", int, None),
        awq_group_size=_number(env, "ARENA_AWQ_GROUP_SIZE", int, None),
        kv_reserve_tokens=_number(env, "ARENA_KV_RESERVE_TOKENS", int, defaults.kv_reserve_tokens),
        llamacpp_verbosity=_number(env, "ARENA_LLAMACPP_VERBOSITY", int, defaults.llamacpp_verbosity),
        cuda_graphs=env.get("ARENA_CUDA_GRAPHS", "1").strip() != "0",
        compile_decode=env.get("ARENA_COMPILE_DECODE", "1").strip() != "0",
        allow_server_commands=env.get(SERVER_COMMANDS_ENV, "") == "1",
        endpoint_api_key=env.get(STORED_KEY_ENV, ""),
        endpoint_hosts=env.get("ARENA_ENDPOINT_HOSTS", "").strip(),
    )


def is_key_variable(name: str) -> bool:
    """Whether a catalogue entry may name `name` as holding its endpoint's key (KEY_VARIABLE_PREFIX)."""
    return bool(_KEY_VARIABLE.fullmatch(name))


def secret(name: str) -> str:
    """The environment variable `name`, which a catalogue entry names as holding its API key ("" if unset).
    ValueError for a name outside KEY_VARIABLE_PREFIX: no caller can read another variable this way."""
    if not is_key_variable(name):
        raise ValueError(f"{name} is not an endpoint key variable ({KEY_VARIABLE_PREFIX}<NAME>).")
    return os.environ.get(name, "")


def _number(env: Mapping[str, str], name: str, kind: type[N], default: D) -> N | D:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return kind(raw)
    except ValueError:
        log.warning("Ignoring %s=%r: not a number", name, raw)
        return default
