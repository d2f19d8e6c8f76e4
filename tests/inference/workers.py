"""Real inference worker processes for tests, and how tests talk to them over Redis: push a
job, read a generation's events as a late joiner would, wait for a state. Shared by the
inference, orchestration and lifecycle tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import redis

from inference import protocol
from inference.protocol import Job, Keys, ModelSpec, SamplingParams

REPO_ROOT = Path(__file__).resolve().parents[2]


class WorkerProcess:
    """A real `python -m inference.worker` subprocess, always stopped in teardown."""

    def __init__(self, worker_id: str, spec_json: str, redis_url: str, prefix: str, log_path: Path, env=None):
        self.worker_id = worker_id
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - open for the process lifetime, closed in stop()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "inference.worker",
                "--worker-id",
                worker_id,
                "--spec",
                spec_json,
                "--redis-url",
                redis_url,
                "--prefix",
                prefix,
            ],
            cwd=REPO_ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ARENA_WORKER_THREADS": "1", **(env or {})},
        )

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_state(self, client: redis.Redis, key: str, states: set[str], timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            fields = client.hgetall(key)
            if fields.get("state") in states:
                return fields
            if self.proc.poll() is not None and fields.get("state") not in states:
                break
            time.sleep(0.05)
        raise AssertionError(f"worker never reached {states}: hash={client.hgetall(key)}\n{self.log_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._log.close()



USER = [{"role": "user", "content": "Say something."}]
LONG = SamplingParams(temperature=0.0, max_new_tokens=2048)  # ~10 s on the tiny model: time to interrupt it


def tiny_spec(tiny_model_dir, **overrides) -> str:
    return ModelSpec(slug="tiny", source=str(tiny_model_dir), **overrides).to_json()


SHORT = SamplingParams(temperature=0.0, max_new_tokens=8)


def push(client, keys: Keys, worker_id: str, params=SHORT, messages=USER):
    job = Job(generation_id=uuid.uuid4().hex, messages=messages, params=params)
    client.rpush(keys.worker_jobs(worker_id), job.to_json())
    return job


def read_events(client, keys: Keys, generation_id: str, *, until=protocol.TERMINAL_EVENTS, timeout=30.0):
    """Events of one generation, read as a late joiner would, up to the first of `until`."""
    key, last, events = keys.stream(generation_id), "0-0", []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for _, entries in client.xread({key: last}, block=100, count=500) or []:
            for entry_id, fields in entries:
                last = entry_id
                events.append(protocol.parse_event(fields))
                if events[-1]["type"] in until:
                    return events
    raise AssertionError(f"no {sorted(until)} event within {timeout}s; got {[e['type'] for e in events]}")


def wait_until(predicate, timeout: float, message: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(message)


class Served:
    def __init__(self, worker: WorkerProcess, keys: Keys, client):
        self.worker, self.keys, self.client = worker, keys, client
        self.id = worker.worker_id

    def push(self, **kwargs):
        return push(self.client, self.keys, self.id, **kwargs)

    def events(self, job, **kwargs):
        return read_events(self.client, self.keys, job.generation_id, **kwargs)

    def status(self) -> dict:
        return self.client.hgetall(self.keys.worker(self.id))

    def wait_idle(self):
        wait_until(lambda: self.status().get("in_flight") == "0", 5, f"worker stayed busy: {self.status()}")


@contextmanager
def serve_tiny_worker(tiny_model_dir, redis_url, log_dir, env=None):
    """A real worker serving the tiny model under a fresh prefix; stopped and cleaned up after."""
    with serve_worker(tiny_spec(tiny_model_dir), redis_url, log_dir, env) as served:
        yield served


@contextmanager
def serve_worker(spec_json: str, redis_url, log_dir, env=None):
    """A real worker serving `spec_json` under a fresh prefix; stopped and cleaned up after."""
    prefix = f"arena-test-{uuid.uuid4().hex[:12]}"
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    worker = WorkerProcess(f"w-{uuid.uuid4().hex[:8]}", spec_json, redis_url, prefix,
                           log_dir / "worker.log", env)
    try:
        keys = Keys(prefix)
        worker.wait_for_state(client, keys.worker(worker.worker_id), {protocol.W_READY})
        yield Served(worker, keys, client)
    finally:
        worker.stop()
        for key in client.scan_iter(match=f"{prefix}:*", count=500):
            client.delete(key)
        client.close()
