"""What a worker writes to Redis: generation events, its status hash, its heartbeat.

No torch here: this is the thin transport layer between the generation loop and
the protocol in `inference.protocol`.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import redis

from inference import protocol
from inference.protocol import Keys
from inference.public_text import public_reason

log = logging.getLogger(__name__)


# The FAILED reason of a job cut short because its worker is stopping (inference.lifecycle).
WORKER_STOPPING = ("The model worker was stopped (the server is restarting) before this answer finished; "
                   "the partial answer was kept. Send again.")


class GenerationEvents:
    """The event stream of one generation (`Keys.stream`), and its cancel flag."""

    def __init__(self, client: redis.Redis, keys: Keys, generation_id: str):
        self.client = client
        self.stream_key = keys.stream(generation_id)
        self.cancel_key = keys.cancel(generation_id)

    def via(self, pipe: redis.client.Pipeline) -> GenerationEvents:
        """The same stream, written through `pipe` (many generations' events in one round trip)."""
        events = object.__new__(GenerationEvents)
        events.client, events.stream_key, events.cancel_key = pipe, self.stream_key, self.cancel_key
        return events

    def cancel_requested(self) -> bool:
        return bool(self.client.exists(self.cancel_key))

    def started(self, prompt_tokens: int | None, queue_s: float) -> None:
        self._add(protocol.STARTED, prompt_tokens=prompt_tokens, queue_s=queue_s)
        # Expire from the start too, so a worker killed mid-stream leaves no immortal stream.
        self.expire()

    def token(self, text: str, n: int, at: int) -> None:
        """`at`: the characters of the answer before `text` (protocol.TOKEN)."""
        self._add(protocol.TOKEN, text=text, n=n, at=at)

    def done(self, text: str, finish_reason: str, metrics: dict[str, Any]) -> None:
        self._add(protocol.DONE, text=text, finish_reason=finish_reason, metrics=metrics)

    def cancelled(self, text: str, metrics: dict[str, Any]) -> None:
        self._add(protocol.CANCELLED, text=text, metrics=metrics)

    def failed(self, reason: str, code: str) -> None:
        """Viewers read the reason without the server's paths or tracebacks; the log keeps it whole."""
        public = public_reason(reason)
        if public != reason:
            log.warning("Generation failed (%s); viewers are told: %s", reason, public)
        self._add(protocol.FAILED, reason=public, code=code)

    def expire(self) -> None:
        self.client.expire(self.stream_key, protocol.STREAM_TTL_S)

    def _add(self, kind: str, **fields: Any) -> None:
        self.client.xadd(self.stream_key, protocol.event(kind, **fields))


class WorkerStatus:
    """The worker's hash (`Keys.worker`), written only by the worker itself.

    It remembers what it wrote, so that a Redis restarted empty (this project's Redis
    keeps nothing on disk) learns the worker's state again (`restore_if_lost`)."""

    def __init__(self, client: redis.Redis, keys: Keys, worker_id: str):
        self.client = client
        self.key = keys.worker(worker_id)
        self._written: dict[str, str] = {}
        self._lock = threading.Lock()

    def restore_if_lost(self) -> bool:
        """Write the whole hash again if Redis no longer has it; True if it did."""
        with self._lock:
            fields = dict(self._written)
        # "state", not the key: the orchestrator may already have written its own field back.
        if not fields or self.client.hexists(self.key, "state"):
            return False
        self.client.hset(self.key, mapping=fields)  # type: ignore[arg-type]  # redis-py: invariant keys refuse a dict[str, str]
        log.warning("Redis had lost this worker's status (restarted?): written again")
        return True

    def starting(self, slug: str, pid: int) -> None:
        self._set(state=protocol.W_STARTING, slug=slug, pid=pid, started_at=time.time())

    def progress(self, line: str) -> None:
        """How far a slow load is; `progress_at` tells the orchestrator the load still moves."""
        self._set(progress=line[:300], progress_at=time.time())

    def ready(self, *, load_s: float, context_length: int, weight_bytes: int, memory_mb: float,
              decode: str = "") -> None:
        """Serving: its load (the decode steps' capture included), sizes, and how it decodes."""
        now = time.time()
        self._set(
            decode=decode,
            state=protocol.W_READY,
            ready_at=now,
            load_s=round(load_s, 3),
            context_length=context_length,
            weight_bytes=weight_bytes,
            memory_mb=round(memory_mb, 1),
            in_flight=0,
            last_used=now,
            served=0,
        )

    def failed(self, error: str) -> None:
        self._set(state=protocol.W_FAILED, error=error)

    def stopped(self) -> None:
        self._set(state=protocol.W_STOPPED, in_flight=0)

    def set_in_flight(self, count: int) -> None:
        """Running plus queued requests (a batching worker holds many at once)."""
        self._set(in_flight=count)

    def requests_finished(self, count: int, in_flight: int) -> None:
        fields = {"in_flight": str(in_flight), "last_used": repr(time.time())}
        pipe = self.client.pipeline()
        pipe.hset(self.key, mapping=fields)  # type: ignore[arg-type]  # redis-py: invariant keys refuse a dict[str, str]
        pipe.hincrby(self.key, "served", count)
        pipe.execute()
        with self._lock:
            self._written.update(fields, served=str(int(self._written.get("served", 0)) + count))

    def _set(self, **fields: Any) -> None:
        mapping = {k: _as_field(v) for k, v in fields.items()}
        self.client.hset(self.key, mapping=mapping)  # type: ignore[arg-type]  # redis-py: invariant keys refuse a dict[str, str]
        with self._lock:
            self._written.update(mapping)


def _as_field(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


class Heartbeat:
    """A thread that keeps `Keys.worker_heartbeat` alive while the process is (and, given
    the worker's `status`, writes that again when a restarted Redis has lost it)."""

    def __init__(self, client: redis.Redis, keys: Keys, worker_id: str, status: WorkerStatus | None = None):
        self.client = client
        self.status = status
        self.key = keys.worker_heartbeat(worker_id)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)

    def beat(self) -> None:
        """One heartbeat now (the thread then renews it every HEARTBEAT_INTERVAL_S)."""
        self.client.set(self.key, repr(time.time()), ex=protocol.HEARTBEAT_TTL_S)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop beating and remove the key: a stopped worker is not a live one."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=protocol.HEARTBEAT_INTERVAL_S * 2)
        try:
            self.client.delete(self.key)
        except redis.RedisError as exc:
            log.warning("Could not remove heartbeat %s: %s", self.key, exc)

    def _run(self) -> None:
        while True:
            try:
                self.beat()
                if self.status is not None:
                    self.status.restore_if_lost()
            except redis.RedisError as exc:  # Redis may come back; the key's TTL tells the truth meanwhile
                log.warning("Heartbeat failed: %s", exc)
            if self._stop.wait(protocol.HEARTBEAT_INTERVAL_S):
                return
