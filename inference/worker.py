"""An inference worker: one OS process serving one loaded model variant.

    python -m inference.worker --worker-id ID --spec JSON --prefix P   (REDIS_URL in the environment)

It reports itself in its Redis hash and heartbeat, loads the model, then takes jobs
from its own list until SIGTERM/SIGINT. Exit codes: 0 stopped, 3 the model failed
to load (the reason is in the hash's `error`), 2 bad command line.

Jobs run on a scheduler thread (`inference.scheduler`). An engine that supports
batching runs them in a continuous batch: this process's main thread keeps taking
jobs into a queue of at most ARENA_WORKER_MAX_QUEUE (default 32; a job beyond it
fails at once with code "busy") while the scheduler runs up to
ARENA_WORKER_MAX_BATCH (default 16) of them side by side. Other engines run one job
at a time, the main thread taking the next only when the last has ended.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, cast

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from inference import config, protocol, redis_connect
from inference.hardware import keep_to_cpus
from inference.protocol import Job, Keys, ModelSpec
from inference.transport import GenerationEvents, Heartbeat, WorkerStatus

if TYPE_CHECKING:
    from inference.engines import Served
    from inference.scheduler import Scheduler

log = logging.getLogger("inference.worker")

EXIT_STOPPED = 0
EXIT_LOAD_FAILED = 3
JOB_WAIT_S = 1  # BLPOP timeout: how often the loop notices a stop request
# A Redis restart (this project's keeps nothing on disk) is ridden out inside each command:
# 0.05 s doubling to 1 s between tries, about 17 s in all, so a generation streaming at the
# time goes on into the fresh Redis instead of failing on its first write.
REDIS_RETRIES = 20
_PR_SET_PDEATHSIG = 1


class _StopRequested(BaseException):
    """Raised by the signal handler to abandon a model load (BaseException: loaders catch Exception)."""


class Worker:
    def __init__(self, worker_id: str, spec_json: str, redis_url: str, keys: Keys):
        self.worker_id = worker_id
        self.spec_json = spec_json
        self.client = redis_client(redis_url, decode_responses=True)
        # Jobs arrive as bytes: a client may push anything, and bytes that are not
        # UTF-8 must become a rejected job, not a decoding error inside redis-py.
        self.jobs_client = redis_client(redis_url, decode_responses=False)
        self.keys = keys
        self.status = WorkerStatus(self.client, keys, worker_id)
        # The heartbeat also writes the status hash again if a restarted Redis lost it,
        # so the orchestrator and requesters keep seeing this worker (and no second one starts).
        self.heartbeat = Heartbeat(self.client, keys, worker_id, status=self.status)
        self._stopping = threading.Event()
        self._loading = False
        self._served: Served | None = None  # kept alive while serving (llama.cpp's server lives in it)

    def run(self) -> int:
        self._install_signal_handlers()
        # Alive before it says "starting": whoever sees the state also sees the heartbeat (the
        # thread's first beat could come late on a busy machine, while this one imports).
        self.heartbeat.beat()
        self.status.starting(slug=_slug_of(self.spec_json), pid=os.getpid())
        self.heartbeat.start()
        try:
            scheduler = self._load()
            if scheduler is None:
                return EXIT_LOAD_FAILED
            if not self._stopping.is_set():
                self._serve(scheduler)
        except _StopRequested:
            log.info("Stopped while loading")
        finally:
            if self._served is not None:
                self._served.close()
            self.heartbeat.stop()
        self.status.stopped()
        log.info("Stopped")
        return EXIT_STOPPED

    def _load(self) -> Scheduler | None:
        """The scheduler around the served engine, or None (state failed) if it did not load."""
        self._loading = True  # from here a stop request abandons the load at once
        settings = config.current()
        max_batch = settings.worker_max_batch
        try:
            # Imported here so the hash says "starting" and heartbeats flow during the
            # seconds that importing torch and transformers takes.
            from inference.engines import serve

            self._served = serve(ModelSpec.from_json(self.spec_json), max_batch=max_batch,
                                 progress=self.status.progress)
        except Exception as exc:  # ModelLoadError, a malformed spec, a broken install: all reported
            log.exception("Model failed to load")
            self.status.failed(f"Model failed to load: {exc}")
            return None
        finally:
            self._loading = False
        served = self._served
        log.info("Serving with %s after %.1f s", type(served.engine).__name__, served.load_s)
        self.status.ready(load_s=served.load_s, context_length=served.context_length,
                          weight_bytes=served.weight_bytes, memory_mb=served.memory_mb)
        from inference.scheduler import build_scheduler

        return build_scheduler(served.engine, self.client, self.keys, self.status, self._stopping.is_set,
                               max_batch=max_batch, max_queue=settings.worker_max_queue)

    def _serve(self, scheduler: Scheduler) -> None:
        jobs_key = self.keys.worker_jobs(self.worker_id)
        scheduler.start()
        try:
            while not self._stopping.is_set():
                try:
                    if not scheduler.wait_for_room(JOB_WAIT_S):
                        continue  # one job at a time and it still runs: the next stays in Redis
                    item = self.jobs_client.blpop([jobs_key], timeout=JOB_WAIT_S)
                    if item is not None:  # bytes: jobs_client does not decode responses
                        self._handle(scheduler, cast(bytes, item[1]).decode("utf-8", errors="replace"))
                except redis.RedisError as exc:  # keep serving once Redis is back
                    log.warning("Redis unavailable (%s); retrying", exc)
                    self._stopping.wait(1.0)
        finally:
            self._stopping.set()  # whatever ended the loop, the scheduler must cancel what it holds
            scheduler.shutdown()

    def _handle(self, scheduler: Scheduler, raw: str) -> None:
        try:
            job = Job.from_json(raw)
        except Exception as exc:  # anything a client may have pushed: never crash on it
            self._reject(raw, exc)
            return
        scheduler.submit(job)

    def _reject(self, raw: str, exc: Exception) -> None:
        generation_id = _readable_generation_id(raw)
        log.warning("Rejected a malformed job (generation %s): %s", generation_id, exc)
        if generation_id is None:
            return
        events = GenerationEvents(self.client, self.keys, generation_id)
        events.failed(f"The job could not be read: {_describe(exc)}", protocol.BAD_JOB)
        events.expire()

    def _install_signal_handlers(self) -> None:
        def on_signal(signum, frame):
            log.info("Got signal %s: stopping", signum)
            self._stopping.set()
            if self._loading:
                raise _StopRequested()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)


def redis_client(url: str, *, decode_responses: bool) -> redis.Redis:
    """A client that reconnects by itself (see REDIS_RETRIES) and notices dead connections."""
    return redis_connect.connect(
        url, decode_responses=decode_responses, health_check_interval=10,
        retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), REDIS_RETRIES),
        retry_on_error=[redis.ConnectionError, redis.TimeoutError],
    )


def _slug_of(spec_json: str) -> str:
    try:
        return str(json.loads(spec_json).get("slug", ""))
    except (ValueError, AttributeError):
        return ""


def _describe(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"the field {exc} is missing"
    if isinstance(exc, json.JSONDecodeError):
        return "it is not valid JSON"
    return str(exc) or type(exc).__name__


def _readable_generation_id(raw: str) -> str | None:
    try:
        value = json.loads(raw).get("generation_id")
    except (ValueError, AttributeError):
        return None
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value) else None


def die_with_parent() -> None:
    """Ask Linux to SIGTERM this process when its parent dies, so no worker is orphaned."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError) as exc:
        log.warning("Could not set PR_SET_PDEATHSIG: %s", exc)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m inference.worker", description=__doc__.splitlines()[0])
    parser.add_argument("--worker-id", required=True)
    parser.add_argument("--spec", required=True, help="ModelSpec as JSON")
    # The environment's REDIS_URL by default: a password on the command line is shown by `ps` to every user.
    parser.add_argument("--redis-url", default=config.current().redis_url,
                        help="default: $REDIS_URL (TLS files: ARENA_REDIS_TLS_CA/CERT/KEY, inference/redis_connect.py)")
    parser.add_argument("--prefix", default="arena", help="Redis key prefix")
    args = parser.parse_args(argv)
    if not args.redis_url:
        parser.error("set REDIS_URL in the environment (or pass --redis-url)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    die_with_parent()
    keep_to_cpus()  # before any thread starts (orchestration/cpus.py)
    logging.basicConfig(
        level=config.current().worker_log_level,
        format=f"%(asctime)s worker {args.worker_id} %(levelname)s %(message)s",
    )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    return Worker(args.worker_id, args.spec, args.redis_url, Keys(args.prefix)).run()


if __name__ == "__main__":
    code = main()
    # The worker has written its last state and its jobs' ends: nothing is left to finalize.
    # Skipping the interpreter's teardown of torch and the model (a second or two, and once in
    # the reliability test far longer) lets a worker whose orchestrator died go at once
    # instead of lingering, an orphan holding the model's memory.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
