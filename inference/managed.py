"""The server engine: an OpenAI-compatible server the worker starts, serves through, and stops.

An entry names a command template instead of a model file, for example

    vllm serve {model} --port {port} --api-key {api_key} --gpu-memory-utilization {fraction}
    python -m inference.llamacpp --model {model} --port {port} --api-key {api_key}

The worker fills in a free 127.0.0.1 port, a fresh API key, the entry's model source and the
share of this machine's GPU memory (else RAM) that the entry's memory estimate is, starts
the command (no shell: the template is split into arguments first, so nothing filled in can
become another command), waits until GET /v1/models answers (reporting its progress), then
serves through `inference.endpoint`. The server dies with the worker (SIGTERM, then SIGKILL;
and Linux kills it if the worker itself is killed).

Running commands is off unless the machine's operator allows it with
ARENA_ALLOW_SERVER_COMMANDS=1: a catalogue entry must not be a way to run programs on
every worker machine.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from inference import config
from inference.endpoint import EndpointEngine
from inference.hardware import descendants, gpu_memory_mb, ram_mb, resident_mb
from inference.protocol import ModelSpec
from inference.sources import ModelSourceError, resolve_source
from inference.worker import die_with_parent

log = logging.getLogger(__name__)

PLACEHOLDERS = ("port", "host", "api_key", "model", "fraction")
PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")
NAMED = re.compile(r"\{([a-z_]+)\}")  # anything that looks like a placeholder
READY_POLL_S = 0.5
STOP_GRACE_S = 10.0


class ServerStartError(Exception):
    """The server did not start; the message is meant for a user."""


def commands_allowed() -> bool:
    return config.current().allow_server_commands


def check_template(template: str) -> str | None:
    """What is wrong with a command template, or None."""
    try:
        words = shlex.split(template)
    except ValueError as exc:
        return f"The command cannot be read: {exc}."
    if not words:
        return "The command is empty."
    if not any("{port}" in word for word in words):
        return "The command must pass {port} to the server (the worker picks a free port)."
    unknown = sorted({name for word in words for name in NAMED.findall(word)} - set(PLACEHOLDERS))
    if unknown:
        return (f"Unknown placeholder {{{unknown[0]}}}: use only "
                f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}.")
    return None


def command(template: str, *, port: int, api_key: str, model: str, fraction: float) -> list[str]:
    """The template as arguments, each placeholder filled in (other braces, JSON's, left alone)."""
    values = {"port": str(port), "host": "127.0.0.1", "api_key": api_key, "model": model,
              "fraction": f"{fraction:.2f}"}
    return [PLACEHOLDER.sub(lambda m: values[m.group(1)], word) for word in shlex.split(template)]


def memory_fraction(memory_mb: float, total_mb: float | None = None) -> float:
    """The entry's memory estimate as a share of `total_mb`, by default this machine's GPU memory (else RAM)."""
    total = total_mb or gpu_memory_mb() or ram_mb()
    return min(0.95, max(0.05, memory_mb / total)) if memory_mb else 0.9


@dataclass
class ManagedServer:
    process: subprocess.Popen
    engine: EndpointEngine
    load_s: float
    stopped: bool = field(default=False)

    def memory_mb(self) -> float:
        """The server's resident memory, its child processes' included."""
        return sum(resident_mb(pid) for pid in [self.process.pid, *descendants(self.process.pid)])

    def close(self) -> None:
        """Stop the server: SIGTERM to its process group, SIGKILL after STOP_GRACE_S."""
        if self.stopped:
            return
        self.stopped = True
        stop_process_group(self.process)


def start(spec: ModelSpec, *, timeout_s: float, progress: Callable[[str], None] | None = None) -> ManagedServer:
    """Start `spec.server_command` and wait until it serves /v1/models."""
    if not commands_allowed():
        raise ServerStartError(f"Server commands are off on this machine: its operator can allow them with "
                               f"{config.SERVER_COMMANDS_ENV}=1.")
    problem = check_template(spec.server_command)
    if problem:
        raise ServerStartError(problem)
    # Hex, not token_urlsafe: a key starting with "-" (1 in 64 of those) reads as an option to the
    # server's argument parser ("--api-key: expected one argument"), a start failing at random.
    port, key = free_port(), secrets.token_hex(24)
    args = command(spec.server_command, port=port, api_key=key, model=_model_argument(spec),
                   fraction=memory_fraction(spec.memory_mb))
    started = time.perf_counter()
    log.info("Starting the server: %s", " ".join(shlex.quote(a) for a in args).replace(key, "[key]"))
    try:
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, start_new_session=True,
                                   preexec_fn=die_with_parent)  # in the child, before exec
    except OSError as exc:
        raise ServerStartError(f"The server command could not start: {exc.strerror or exc} ({args[0]}).") from exc
    base_url = f"http://127.0.0.1:{port}/v1"
    uses_key = "{api_key}" in spec.server_command
    try:
        model = wait_ready(process, base_url, key if uses_key else "", timeout_s, started, progress)
    except BaseException:
        stop_process_group(process)
        raise
    engine = EndpointEngine(base_url=base_url, model=spec.remote_model or model, api_key=key if uses_key else "",
                            base=spec.base, max_concurrency=spec.max_concurrency)
    return ManagedServer(process, engine, time.perf_counter() - started)


def wait_ready(process: subprocess.Popen, base_url: str, key: str, timeout_s: float, started: float,
               progress: Callable[[str], None] | None) -> str:
    """Poll GET /v1/models until it answers; the first model's id."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    deadline = started + timeout_s
    while time.perf_counter() < deadline:
        code = process.poll()
        if code is not None:
            raise ServerStartError(f"The server command exited with code {code} before it was ready "
                                   "(its output is in the worker's log).")
        try:
            response = httpx.get(base_url + "/models", headers=headers, timeout=2, trust_env=False)
            if response.status_code == 200:
                models = response.json().get("data") or [{}]
                return str(models[0].get("id") or "")
        except (httpx.HTTPError, ValueError, AttributeError):
            pass  # not listening yet
        if progress:
            progress(f"Starting the server: {time.perf_counter() - started:.0f} s")
        time.sleep(READY_POLL_S)
    raise ServerStartError(f"The server did not answer /v1/models within {timeout_s:.0f} s.")


def _model_argument(spec: ModelSpec) -> str:
    """{model}: the source resolved to a local path when it is one, else as written (a hub id for vLLM)."""
    if not spec.source:
        return ""
    try:
        return str(resolve_source(spec.source, spec.gguf_file))
    except ModelSourceError:
        return spec.source


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process_group(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue

