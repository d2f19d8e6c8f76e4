"""The orchestrator's policy, pure: given what it sees and the time, what to do.

No I/O, no clock of its own: the service feeds it observations and `now`, and
carries out the actions it returns. Tests drive it with a fake clock.
"""

from __future__ import annotations

from dataclasses import dataclass

# Worker states as the orchestrator sees them.
STARTING = "starting"
READY = "ready"
STOPPING = "stopping"
STOPPED = "stopped"
FAILED = "failed"
ALIVE = frozenset({STARTING, READY})


@dataclass(frozen=True)
class Config:
    keep_alive_s: float = 600.0  # unload a worker idle for this long
    start_timeout_s: float = 300.0  # a worker not ready by then has failed to load
    heartbeat_grace_s: float = 6.0  # a ready worker silent for this long has hung
    want_ttl_s: float = 5.0  # a request keeps its model wanted this long after it was last renewed
    retry_base_s: float = 2.0  # a variant that failed waits this, doubling per failure, before a retry
    retry_max_s: float = 60.0

    def retry_delay(self, failures: int) -> float:
        return 0.0 if failures <= 0 else min(self.retry_max_s, self.retry_base_s * 2 ** (failures - 1))


@dataclass(frozen=True)
class WorkerView:
    """One worker as observed this tick."""

    worker_id: str
    slug: str
    state: str
    started_at: float
    last_used: float
    last_heartbeat: float | None = None  # None: not heartbeating (yet)
    in_flight: int = 0
    queued: int = 0
    exit_code: int | None = None  # set once the process has exited
    error: str = ""  # what the worker said about itself (e.g. its load error)
    progress_at: float | None = None  # when a slow load (AWQ quantisation) last reported progress

    @property
    def idle(self) -> bool:
        return self.in_flight == 0 and self.queued == 0


@dataclass(frozen=True)
class Failures:
    """A variant's failures in a row (reset once it loads), and when the last one was."""

    count: int
    last_at: float


@dataclass(frozen=True)
class Spawn:
    slug: str


@dataclass(frozen=True)
class Stop:
    worker_id: str
    reason: str


@dataclass(frozen=True)
class Fail:
    worker_id: str
    reason: str


Action = Spawn | Stop | Fail


def describe_exit(code: int) -> str:
    if code < 0:
        return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _failure(worker: WorkerView, now: float, config: Config) -> str | None:
    """Why an alive worker must be declared failed, or None."""
    if worker.exit_code is not None:
        if worker.error:
            return worker.error
        return f"The model worker {describe_exit(worker.exit_code)}."
    if worker.state == STARTING:
        # A load that keeps reporting progress (a one-time quantisation) may take longer
        # than the timeout; the timeout then counts from its last progress report.
        if worker.progress_at is None and now - worker.started_at > config.start_timeout_s:
            return f"The model did not finish loading within {config.start_timeout_s:.0f} s."
        if worker.progress_at is not None and now - max(worker.progress_at, worker.started_at) > config.start_timeout_s:
            return f"The model's loading made no progress for {config.start_timeout_s:.0f} s."
    if worker.state == READY and worker.last_heartbeat is not None:
        silent = now - worker.last_heartbeat
        if silent > config.heartbeat_grace_s:
            return f"The model worker stopped responding (no heartbeat for {silent:.0f} s)."
    return None


def plan(
    workers: list[WorkerView],
    wanted: set[str],
    now: float,
    config: Config,
    failures: dict[str, Failures] | None = None,
) -> list[Action]:
    """Decide this tick's actions: fail the dead and hung, start what is wanted and
    not served (a variant that keeps failing only after a growing back-off), stop
    what has been idle past the keep-alive."""
    failures = failures or {}
    actions: list[Action] = []
    serving: set[str] = set()
    failing: set[str] = set()
    for worker in workers:
        if worker.state not in ALIVE:
            continue
        reason = _failure(worker, now, config)
        if reason:
            actions.append(Fail(worker.worker_id, reason))
            failing.add(worker.slug)
            continue
        serving.add(worker.slug)
        idle_for = now - worker.last_used
        if worker.state == READY and worker.idle and worker.slug not in wanted and idle_for > config.keep_alive_s:
            actions.append(Stop(worker.worker_id, f"idle for {idle_for:.0f} s"))
    for slug in sorted(wanted - serving - failing):
        failed = failures.get(slug)
        if failed is None or now >= failed.last_at + config.retry_delay(failed.count):
            actions.append(Spawn(slug))
    return actions
