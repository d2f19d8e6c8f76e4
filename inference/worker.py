"""An inference worker: one OS process serving one loaded model variant.

    python -m inference.worker --worker-id ID --spec JSON --prefix P   (REDIS_URL in the environment)
    python -m inference.worker --spare ENGINE   (a spare: its assignment comes on stdin)

It reports itself in its Redis hash and heartbeat, loads the model, then takes jobs
from its own list until SIGTERM/SIGINT. Exit codes: 0 stopped, 3 the model failed
to load (the reason is in the hash's `error`), 2 bad command line.

Jobs run on a scheduler thread (`inference.scheduler`). An engine that supports
batching runs them in a continuous batch: this process's main thread keeps taking
jobs into a queue of at most ARENA_WORKER_MAX_QUEUE (default 32; a job beyond it waits
in the Redis list, never refused) while the scheduler runs up to
ARENA_WORKER_MAX_BATCH (default 16) of them side by side. Other engines run one job
at a time, the main thread taking the next only when the last has ended.

A spare (`--spare ENGINE`, the local backend's: orchestration/backends/local.py) is a worker
started ahead: it imports ENGINE's libraries (torch and transformers take seconds), then
waits on stdin for one JSON line, {"argv": [...], "env": {...}}, and from there runs as the
worker those arguments and that environment describe. A cold variant then pays only its
model's load. Its log says where a start's seconds went ("Startup: ...").
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import json
import logging
import os
import signal
import sys
import threading
import time
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
# What a worker of each engine imports before it can load a model: a spare imports them ahead.
ENGINE_MODULES = {
    "transformers": ("torch", "transformers", "inference.loading", "inference.engine", "inference.speculative",
                     "inference.batched_decoder", "inference.scheduler"),
    "llamacpp": ("inference.llamacpp", "inference.scheduler"),
}


class _StopRequested(BaseException):
    """Raised by the signal handler to abandon a model load (BaseException: loaders catch Exception)."""


class Worker:
    def __init__(self, worker_id: str, spec_json: str, redis_url: str, keys: Keys, startup: Startup | None = None):
        self.worker_id = worker_id
        self.startup = startup or Startup(began=time.time())
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
            spec = ModelSpec.from_json(self.spec_json)
            # Imported here so the hash says "starting" and heartbeats flow during the
            # seconds that importing torch and transformers takes (a spare did it ahead).
            self.startup.imports_s += import_engine(spec.engine)
            from inference.engines import serve

            loading_from = time.time()
            self._served = served = serve(spec, max_batch=max_batch, progress=self.status.progress)
            from inference.scheduler import build_scheduler

            # A GPU's decode steps are captured here: part of the load, as the status says.
            scheduler = build_scheduler(served.engine, self.client, self.keys, self.status, self._stopping.is_set,
                                        max_batch=max_batch, max_queue=settings.worker_max_queue)
            self.startup.load_s = time.time() - loading_from
        except Exception as exc:  # ModelLoadError, a malformed spec, a broken install: all reported
            log.exception("Model failed to load")
            self.status.failed(f"Model failed to load: {exc}")
            return None
        finally:
            self._loading = False
        decode = scheduler.decode_kind
        log.info("Serving with %s after %.1f s (decode steps: %s)", type(served.engine).__name__,
                 self.startup.load_s, decode)
        log.info("Startup: %s", self.startup.describe())
        # A GPU batch allocated its KV slots up front: what it holds replaces the estimate of its cache.
        memory_mb = scheduler.held_mb if scheduler.held_mb is not None else served.memory_mb
        self.status.ready(load_s=self.startup.load_s, context_length=served.context_length,
                          weight_bytes=served.weight_bytes, memory_mb=memory_mb, decode=decode)
        return scheduler

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


class Startup:
    """Where a worker's start went, for its log: the seconds before `main` ran (the process's start:
    the interpreter and this module's imports), importing the engine's libraries, loading the
    model (its warm-up answer included)."""

    def __init__(self, began: float, interpreter_s: float | None = None, imports_s: float = 0.0,
                 spare: bool = False):
        self.began = began  # this worker's start: its process's, or a spare's assignment
        self.interpreter_s = interpreter_s
        self.imports_s = imports_s
        self.spare = spare
        self.load_s: float | None = None

    def describe(self) -> str:
        parts = ["assigned to a spare" if self.spare else f"process start {_seconds(self.interpreter_s)}",
                 f"imports {self.imports_s:.2f} s", f"load and warm-up {_seconds(self.load_s)}",
                 f"ready {time.time() - self.began:.2f} s after its start"]
        return ", ".join(parts)


def _seconds(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f} s"


def import_engine(engine: str) -> float:
    """Import what a worker of `engine` needs before it loads (ENGINE_MODULES); the seconds it took."""
    started = time.perf_counter()
    for name in ENGINE_MODULES.get(engine, ()):
        importlib.import_module(name)
    return time.perf_counter() - started


def process_age_s() -> float | None:
    """Seconds since this process started (from /proc: Linux only, to 10 ms)."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            started_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
            return float(uptime.read().split()[0]) - started_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def wait_as_spare(engine: str) -> tuple[list[str], Startup]:
    """A spare's life before its assignment: import `engine`'s libraries, then wait on stdin for
    {"argv": [...], "env": {...}}; the worker's arguments, its environment applied. Nothing here
    starts a thread or touches Redis: the worker is pinned to its cores only once assigned."""
    imports_s = import_engine(engine)
    print(f"Spare for {engine}: imported in {imports_s:.2f} s; waiting for a model", file=sys.stderr, flush=True)
    line = sys.stdin.readline()
    if not line:  # the backend closed the pipe: nothing to serve
        raise SystemExit(EXIT_STOPPED)
    assignment = json.loads(line)
    os.environ.update({str(k): str(v) for k, v in assignment.get("env", {}).items()})
    return [str(arg) for arg in assignment["argv"]], Startup(began=time.time(), imports_s=0.0, spare=True)


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
    parser.add_argument("--spare", metavar="ENGINE", choices=sorted(ENGINE_MODULES),
                        help="start as a spare: import ENGINE's libraries, then read the worker's arguments from stdin")
    parser.add_argument("--worker-id", required=False)
    parser.add_argument("--spec", required=False, help="ModelSpec as JSON")
    # The environment's REDIS_URL by default: a password on the command line is shown by `ps` to every user.
    parser.add_argument("--redis-url", default=config.current().redis_url,
                        help="default: $REDIS_URL (TLS files: ARENA_REDIS_TLS_CA/CERT/KEY, inference/redis_connect.py)")
    parser.add_argument("--prefix", default="arena", help="Redis key prefix")
    args = parser.parse_args(argv)
    if args.spare:
        return args
    if not args.worker_id or not args.spec:
        parser.error("--worker-id and --spec are required")
    if not args.redis_url:
        parser.error("set REDIS_URL in the environment (or pass --redis-url)")
    return args


def main(argv: list[str] | None = None) -> int:
    age = process_age_s()
    startup = Startup(began=time.time() - (age or 0.0), interpreter_s=age)
    args = parse_args(argv)
    die_with_parent()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers is imported (a spare imports it first)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    if args.spare:
        argv, startup = wait_as_spare(args.spare)
        args = parse_args(argv)
    keep_to_cpus()  # before any thread starts (orchestration/cpus.py); a spare's few are pinned too
    logging.basicConfig(
        level=config.current().worker_log_level,
        format=f"%(asctime)s worker {args.worker_id} %(levelname)s %(message)s",
    )
    return Worker(args.worker_id, args.spec, args.redis_url, Keys(args.prefix), startup).run()


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
