"""Running a generation: get a worker from the orchestrator, hand it the job, follow
its event stream to the end and store the outcome. The stream is the source of truth
for browsers; this task is what makes the database agree with it."""

from __future__ import annotations

import logging
import time

import redis
from celery import shared_task
from django.conf import settings

from arena import streams
from inference import protocol as p
from inference.protocol import Job
from inference.transport import WORKER_STOPPING
from orchestration import client as orch

from .models import Generation

log = logging.getLogger(__name__)
FOLLOW_BLOCK_MS = 500
MAX_DISPATCHES = 3  # a worker that stops before taking the job: try a fresh one

# What users read when the machinery, not the model, ended their generation.
REDIS_LOST = "The server lost its connection to Redis while writing this answer; the partial answer was kept. Send again."
RESTARTED_BEFORE_START = "The server restarted before this answer started. Send again."
WORKER_STOPPED = WORKER_STOPPING  # the worker's own words when it ends a request nobody cancelled


@shared_task(ignore_result=True, soft_time_limit=3600, time_limit=3700)
def run_generation(generation_id: str) -> None:
    gen = Generation.objects.select_related("model").filter(id=generation_id).first()
    if gen is None or not gen.claim(Generation.Status.QUEUED, Generation.Status.LOADING):
        return  # gone, or another task already has it
    GenerationRun(gen).run()


class GenerationRun:
    """One generation from start to end: a worker, the job, the stream, the outcome."""

    def __init__(self, gen: Generation):
        self.follower = Follower(gen)
        self.gen = gen

    def run(self) -> None:
        follower = self.follower
        try:
            for _ in range(MAX_DISPATCHES):
                worker_id = self._wait_for_worker()
                follower.dispatch(worker_id)
                if follower.follow_alone():
                    return
            follower.fail(p.WORKER_DIED, "The model worker kept stopping before it could start. Try again.")
        except orch.WorkerUnavailable as exc:
            follower.unavailable(str(exc))
        except redis.RedisError:  # down for longer than the client's retries ride out
            log.exception("Generation %s lost Redis", self.gen.id)
            follower.fail(p.ENGINE_ERROR, REDIS_LOST)
        except Exception:  # never leave a generation running forever
            log.exception("Generation %s crashed", self.gen.id)
            follower.fail(p.ENGINE_ERROR, "An internal error stopped this generation.")

    def _wait_for_worker(self) -> str:
        started = time.time()
        worker_id = orch.wait_for_worker(
            self.follower.redis, self.follower.keys, self.gen.model.spec(),
            timeout_s=settings.ARENA_LOAD_TIMEOUT_S,
            on_wait=lambda elapsed, progress: self.follower.emit(
                p.LOADING, elapsed_s=round(elapsed, 1), model=self.gen.model.name, progress=progress
            ),
            should_cancel=self.follower.cancel_requested,
        )
        self.gen.load_wait_s = time.time() - started
        return worker_id


class Follower:
    """One generation's side of the work once it has a worker: hand it the job, read its
    event stream, notice the worker dying or every viewer leaving, and store the outcome.

    A battle runs two of these off one stream read (`read_many`).

    While it follows, it keeps the generation's watch key alive (`keep_watch`): the
    sweeper (arena/playground/sweeper.py) ends generations whose follower has gone (a
    Celery worker killed), and the key coming back empty tells this follower that Redis
    restarted and lost what it held (a job not yet taken, the viewers, the cancel flags)."""

    def __init__(self, gen: Generation):
        self.gen = gen
        self.redis = streams.client()
        self.keys = streams.keys()
        self.stream = self.keys.stream(str(gen.id))
        self.last_id = "0"
        self.text: list[str] = []
        self.worker_id = ""
        self.started = False
        self.done = False
        self.needs_retry = False  # the worker went away before it took the job
        self.deadline = time.time() + settings.ARENA_GENERATION_TIMEOUT_S
        self.watch_key = streams.watch_key(str(gen.id))
        self.watching = False  # set once: from then on a missing key means Redis lost it

    # --- steps ----------------------------------------------------------------------
    def job(self) -> Job:
        return Job(str(self.gen.id), self.gen.messages(), self.gen.sampling_params(), enqueued_at=time.time())

    def dispatch(self, worker_id: str) -> None:
        self.worker_id, self.needs_retry = worker_id, False
        self.redis.rpush(self.keys.worker_jobs(worker_id), self.job().to_json())

    def follow_alone(self) -> bool:
        """Follow to the end; False when the worker went away before starting the job (retry)."""
        while not self.done and not self.needs_retry:
            for ev in self.read():
                self.handle(ev)
            self.check()
        return self.done

    def read(self) -> list[dict]:
        return read_many([self], FOLLOW_BLOCK_MS).get(self, [])

    def handle(self, ev: dict) -> None:
        kind = ev["type"]
        if kind == p.STARTED and not self.started:
            self.started = True
            self.gen.claim(Generation.Status.LOADING, Generation.Status.RUNNING, load_wait_s=self.gen.load_wait_s)
        elif kind == p.TOKEN:
            self.text.append(ev.get("text", ""))
        elif kind in p.TERMINAL_EVENTS:
            self.store_outcome(ev)
            self.done = True

    def check(self) -> None:
        """Between reads: Redis restarted, a dead worker, an abandoned page, the time limit."""
        if self.done:
            return
        self.keep_watch()
        if self.done:
            return
        failure = orch.worker_failure(self.redis, self.keys, self.worker_id)
        if failure:
            if not self.started:
                self.needs_retry = True
                return
            self.fail(p.WORKER_DIED, f"{failure} The partial answer was kept; send again to retry.")
            return
        self.check_abandoned()
        if time.time() > self.deadline:
            self.fail(p.TIMEOUT, f"Stopped after {settings.ARENA_GENERATION_TIMEOUT_S:.0f} s.")
            self.stop_worker_job("timeout")

    def check_abandoned(self) -> None:
        """A web generation whose every viewer left more than the grace ago is cancelled."""
        if self.gen.origin != Generation.Origin.WEB:
            return
        left_at, count = self.redis.hmget(self.keys.viewers(str(self.gen.id)), ["left_at", "count"])
        if left_at and int(count or 0) <= 0 and time.time() - float(left_at) > settings.ARENA_DISCONNECT_GRACE_S:
            self.redis.set(self.keys.cancel(str(self.gen.id)), "abandoned", ex=p.STREAM_TTL_S)

    def cancel_requested(self) -> bool:
        self.keep_watch()
        self.check_abandoned()
        return bool(self.redis.exists(self.keys.cancel(str(self.gen.id))))

    def keep_watch(self) -> None:
        """Renew the watch key; if Redis no longer had it, Redis restarted under us."""
        if self.done:
            return  # stored: nothing left to watch
        previous = self.redis.set(self.watch_key, self.worker_id or "waiting", px=int(streams.watch_ttl_s() * 1000),
                                  get=True)
        if self.watching and previous is None:
            self._redis_lost_state()
        self.watching = True

    def _redis_lost_state(self) -> None:
        """Redis came back empty. Waiting for a worker goes on (requests are renewed), and
        a started generation goes on into the fresh stream (its worker rode out the restart);
        but a job handed to a worker and not yet started was in the list Redis lost."""
        log.warning("Redis lost its state under generation %s (restarted?)", self.gen.id)
        if self.worker_id and not self.needs_retry and not self.started:
            self.fail(p.WORKER_DIED, RESTARTED_BEFORE_START)
            self.stop_worker_job("restart")  # if the worker did take it after all, rather than answer nobody

    def stop_worker_job(self, why: str) -> None:
        """Cancel the worker's job of a generation already failed. After the FAILED event, never
        before: the worker's CANCELLED would otherwise be what the viewers hear first."""
        self.redis.set(self.keys.cancel(str(self.gen.id)), why, ex=p.STREAM_TTL_S)

    # --- outcomes -------------------------------------------------------------------
    def store_outcome(self, ev: dict) -> None:
        kind = ev["type"]
        metrics = ev.get("metrics") or {}
        if kind == p.DONE:
            self.gen.finish(Generation.Status.DONE, text=ev.get("text", "".join(self.text)),
                            finish_reason=ev.get("finish_reason", ""), metrics=metrics)
        elif kind == p.CANCELLED and not self.redis.exists(self.keys.cancel(str(self.gen.id))):
            # Nobody asked: the worker cancelled it because it was being stopped itself
            # (its orchestrator went away, the server is shutting down). Not the user's doing.
            self.gen.finish(Generation.Status.FAILED, text=ev.get("text", "".join(self.text)), reason=WORKER_STOPPED,
                            metrics=metrics)
        elif kind == p.CANCELLED:
            self.gen.finish(Generation.Status.CANCELLED, text=ev.get("text", "".join(self.text)),
                            finish_reason="cancelled", metrics=metrics)
        else:
            self.gen.finish(Generation.Status.FAILED, text="".join(self.text), reason=ev.get("reason", "failed"),
                            metrics=metrics)

    def unavailable(self, reason: str) -> None:
        """No worker could be had: cancelled by the user, or failed with the orchestrator's reason."""
        if self.done:
            return
        if reason == "cancelled":
            self.emit(p.CANCELLED, text="", metrics={})
            self.gen.finish(Generation.Status.CANCELLED, text="")
        else:
            self.fail(p.LOAD_FAILED, reason)
        self.done = True

    def fail(self, code: str, reason: str) -> None:
        """Store the failure, then tell the viewers (if Redis can be reached: the database
        must have it either way, and a viewer whose stream is gone reads it from there)."""
        self.done = True
        if not self.gen.finish(Generation.Status.FAILED, text="".join(self.text), reason=reason):
            return  # already ended elsewhere (the sweeper, a stop): it told the viewers
        try:
            self.emit(p.FAILED, reason=reason, code=code)
        except redis.RedisError as exc:
            log.warning("Could not tell the viewers of generation %s that it failed: %s", self.gen.id, exc)

    def emit(self, kind: str, **fields) -> None:
        self.redis.xadd(self.stream, p.event(kind, **fields))
        self.redis.expire(self.stream, p.STREAM_TTL_S)


def read_many(followers: list[Follower], block_ms: int) -> dict[Follower, list[dict]]:
    """One blocking read over several generations' streams: each follower's new events."""
    by_stream = {f.stream: f for f in followers}
    reply = followers[0].redis.xread({f.stream: f.last_id for f in followers}, block=block_ms, count=500)
    events: dict[Follower, list[dict]] = {}
    for stream, entries in reply or []:
        follower = by_stream[stream.decode() if isinstance(stream, bytes) else stream]
        for entry_id, fields in entries:
            follower.last_id = entry_id
            events.setdefault(follower, []).append(p.parse_event(fields))
    return events
