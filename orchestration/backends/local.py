"""The local backend: one OS process per served model, on this machine.

Spares: a cold transformers worker spends most of its start importing torch and transformers
(seconds, before any model is read). For each engine in `spares` the backend keeps one worker
process started ahead (`python -m inference.worker --spare ENGINE`: the imports done, then idle
on its stdin) when the policy says so (`StartSpare`: a quiet node, memory nobody waits for); the
next worker of that engine is that process, handed its arguments and environment down the pipe,
and the policy starts another once the node is quiet again. A spare's memory (measured, never
below SPARE_ESTIMATE_MB) is in the policy's ledger, and it is the first thing dropped for room.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from inference import config as inference_config
from inference.config import STORED_KEY_ENV
from inference.hardware import gpu_count, resident_mb, usable_cpus
from inference.protocol import ModelSpec
from orchestration import config, cpus, sealing
from orchestration.policy import LOCAL_NODE, Node, Spare
from orchestration.resources import node_budget_mb

log = logging.getLogger(__name__)
STOP_GRACE_S = 10.0
# A spare's resident memory once its imports are done, until one is measured (2 cores, torch 2.11 and
# transformers 5: ~770 MB with transformers, torchao and llguidance imported; ~50 MB for llama.cpp's).
SPARE_ESTIMATE_MB = {"transformers": 800.0, "llamacpp": 80.0}


@dataclass
class _Process:
    popen: subprocess.Popen
    log_path: Path
    kill_at: float | None = None  # when a SIGTERMed worker gets SIGKILL
    cpus: tuple[int, ...] = ()  # the cores it is pinned to (orchestration/cpus.py)


@dataclass
class _Spare:
    engine: str
    popen: subprocess.Popen
    log_path: Path


class LocalBackend:
    """Starts `python -m inference.worker` subprocesses and watches them exit."""

    elastic = False  # this machine is all there is: what can never fit is refused
    reserves_requested = False  # a worker's measured memory counts once it has one

    def __init__(self, redis_url: str, prefix: str, log_dir: Path, env: dict[str, str] | None = None,
                 budget_mb: float | None = None, node_id: str = LOCAL_NODE, secrets_key: str | None = None,
                 spares: Sequence[str] = ()):
        """`spares`: the engines to keep a spare worker of (SPARE_ESTIMATE_MB's; none by default)."""
        self.node = node_id
        self.redis_url = redis_url
        self.budget_mb = node_budget_mb() if budget_mb is None else budget_mb
        self.prefix = prefix
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, **(env or {})}
        # Opens the stored keys of the entries it starts (orchestration/sealing.py); a worker gets its
        # own entry's key, never this one.
        self.secrets_key = self.env.pop(sealing.SECRETS_KEY_ENV, "") if secrets_key is None else secrets_key
        self.env.pop(sealing.SECRETS_KEY_ENV, None)
        self.env.pop(STORED_KEY_ENV, None)  # only a worker whose entry stores a key gets one
        self._procs: dict[str, _Process] = {}
        self.gpus = float(gpu_count())
        unknown = set(spares) - set(SPARE_ESTIMATE_MB)
        if unknown:
            known = ", ".join(SPARE_ESTIMATE_MB)
            raise ValueError(f"No spare workers of {', '.join(sorted(unknown))} (known: {known}).")
        self._spare_mb = {engine: SPARE_ESTIMATE_MB[engine] for engine in dict.fromkeys(spares)}
        self._spares: dict[str, _Spare] = {}

    def nodes(self) -> list[Node]:
        """This machine: one node, always alive."""
        return [Node(self.node, budget_mb=self.budget_mb, gpus=self.gpus)]

    def describe_nodes(self) -> list[dict]:
        cores = float(len(usable_cpus()))
        return [{"node": self.node, "name": self.node, "alive": True, "reason": "", "budget_mb": self.budget_mb,
                 "resources": {"cpus": cores, "gpus": self.gpus, "memory_mb": self.budget_mb}, "in_use": None}]

    def node_name(self, node_id: str) -> str:
        return node_id

    def node_of(self, worker_id: str) -> str | None:
        return self.node if worker_id in self._procs else None

    def exit_reason(self, worker_id: str) -> str:
        """Nothing but the exit code tells why a local process ended."""
        return ""

    def demand(self, specs: list[ModelSpec]) -> None:
        """One machine cannot grow."""

    def start(self, worker_id: str, spec: ModelSpec, node_id: str = LOCAL_NODE) -> int:
        """Start the worker: in this engine's spare if there is one (it takes over), else a new process."""
        log_path = self.log_dir / f"worker-{worker_id}.log"
        args = ["--worker-id", worker_id, "--spec", spec.to_json(), "--prefix", self.prefix]
        share = self._cpu_share()
        # The URL (and any password in it) goes in the environment, not on the command line `ps` shows;
        # so does the entry's stored API key, opened here (the spec carries it sealed).
        own_env = {**(cpus.worker_env(share) if share else {}), "REDIS_URL": self.redis_url,
                   **sealing.worker_env(spec, self.secrets_key)}
        spare = self._spares.pop(spec.engine, None)
        if spare is not None and spare.popen.poll() is None:
            popen = self._assign(spare, args, own_env, log_path)
        else:
            popen = self._popen(args, {**self.env, **own_env}, log_path)
        self._procs[worker_id] = _Process(popen, log_path, cpus=share)
        return popen.pid

    def _popen(self, args: list[str], env: dict[str, str], log_path: Path, stdin=None) -> subprocess.Popen:
        with open(log_path, "ab") as log_file:
            # Its own session: Ctrl-C in the terminal reaches the launcher, which stops
            # everything in order; the worker also dies with its parent (PDEATHSIG).
            return subprocess.Popen([sys.executable, "-m", "inference.worker", *args], stdin=stdin, stdout=log_file,
                                    stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def _assign(self, spare: _Spare, args: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen:
        """Hand the spare its worker's arguments and environment (over its stdin: nothing shows in `ps`)."""
        spare.log_path.rename(log_path)  # it keeps writing to the same file, under the worker's name
        stdin = spare.popen.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps({"argv": args, "env": env}).encode() + b"\n")
            stdin.close()
        except OSError:  # it died just now: its exit shows as the worker's, and the policy retries
            log.warning("The %s spare exited before it could take its worker", spare.engine)
        return spare.popen

    def spare_sizes(self) -> dict[str, float]:
        return dict(self._spare_mb)

    def spares(self) -> list[Spare]:
        """The spares alive, each counted at the largest a spare of its engine has measured (its imports
        grow it for seconds after it starts); a spare that exited is forgotten."""
        for engine, spare in list(self._spares.items()):
            if spare.popen.poll() is not None:
                log.warning("The %s spare exited (code %s): %s", engine, spare.popen.returncode,
                            _tail(spare.log_path))
                self._spares.pop(engine)
                continue
            self._spare_mb[engine] = max(self._spare_mb[engine], resident_mb(spare.popen.pid))
        return [Spare(engine, self._spare_mb[engine], self.node) for engine in self._spares]

    def start_spare(self, engine: str, node_id: str = LOCAL_NODE) -> None:
        if engine in self._spares:
            return
        log_path = self.log_dir / f"spare-{engine}-{uuid.uuid4().hex[:8]}.log"
        popen = self._popen(["--spare", engine], dict(self.env), log_path, stdin=subprocess.PIPE)
        self._spares[engine] = _Spare(engine, popen, log_path)

    def drop_spare(self, engine: str, node_id: str = LOCAL_NODE) -> None:
        """Kill it (it holds no model and no work) and wait: its memory is free on return."""
        spare = self._spares.pop(engine, None)
        if spare is None:
            return
        spare.popen.kill()
        spare.popen.wait(timeout=STOP_GRACE_S)
        if spare.popen.stdin is not None:
            spare.popen.stdin.close()
        spare.log_path.unlink(missing_ok=True)

    def _cpu_share(self) -> tuple[int, ...]:
        """The cores a new worker is pinned to; none when every worker may use every core
        (ARENA_CPU_SHARES=1, or an operator's own ARENA_WORKER_THREADS)."""
        shares = config.current(self.env).cpu_shares
        if shares == 1 or inference_config.current(self.env).worker_threads:
            return ()
        held = [p.cpus for p in self._procs.values() if p.cpus and p.popen.poll() is None]
        return cpus.assign(usable_cpus(), shares, held)

    def pid(self, worker_id: str) -> int | None:
        proc = self._procs.get(worker_id)
        return proc.popen.pid if proc else None

    def poll(self, worker_id: str) -> int | None:
        """The exit code once the process has exited, else None (SIGKILLs overdue stops)."""
        proc = self._procs.get(worker_id)
        if proc is None:
            return None
        code = proc.popen.poll()
        if code is None and proc.kill_at is not None and time.monotonic() >= proc.kill_at:
            proc.popen.kill()
        return code

    def log_tail(self, worker_id: str, lines: int = 5) -> str:
        proc = self._procs.get(worker_id)
        if proc is None or not proc.log_path.exists():
            return ""
        text = proc.log_path.read_text(errors="replace").strip().splitlines()
        return "\n".join(text[-lines:])

    def stop_orphan(self, pid: int, node_id: str = LOCAL_NODE) -> str:
        """Stop a worker process another orchestrator started (SIGTERM, then SIGKILL); say how it went."""
        if pid <= 0 or not _is_worker(pid):
            return "already gone"
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < deadline:
            if not _is_worker(pid):
                return "stopped"
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)
        return "killed"

    def stop(self, worker_id: str) -> None:
        """Ask politely (SIGTERM); `poll` escalates to SIGKILL after a grace period."""
        proc = self._procs.get(worker_id)
        if proc and proc.popen.poll() is None:
            proc.popen.send_signal(signal.SIGTERM)
            proc.kill_at = time.monotonic() + STOP_GRACE_S

    def kill(self, worker_id: str, wait: bool = True) -> None:
        proc = self._procs.get(worker_id)
        if proc and proc.popen.poll() is None:
            proc.popen.kill()
            if wait:
                proc.popen.wait(timeout=10)

    def forget(self, worker_id: str) -> None:
        self._procs.pop(worker_id, None)

    def worker_ids(self) -> list[str]:
        return list(self._procs)

    def shutdown(self, timeout: float = STOP_GRACE_S) -> None:
        """Stop every worker and wait for them; nothing is left behind."""
        for engine in list(self._spares):
            self.drop_spare(engine)
        for worker_id in list(self._procs):
            self.stop(worker_id)
        deadline = time.monotonic() + timeout
        for proc in self._procs.values():
            remaining = max(0.1, deadline - time.monotonic())
            try:
                proc.popen.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                proc.popen.kill()
                proc.popen.wait(timeout=5)
        self._procs.clear()


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace").strip()[-300:]
    except OSError:
        return ""


def _is_worker(pid: int) -> bool:
    """Whether `pid` is a live inference worker (not a recycled pid of something else)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return b"inference.worker" in cmdline and state != "Z"
