"""Running generations: one request path for a single answer and a battle's two.

`Run` leases the models of all its sides together from the orchestrator (a single
generation is a one-model lease), hands each worker its job, follows every side's event
stream with one read, and has lifecycle.py store each side's end. The streams are the source of truth for
browsers; a run is what makes the database agree with them. A battle is a `Run` with two
sides and a few hooks (arena/battles/tasks.py), not a second loop."""

from __future__ import annotations

import logging
import time

import redis
from django.conf import settings

from arena import streams
from inference import protocol as p
from inference.protocol import Job
from orchestration import client as orch

from . import admission, lifecycle, services
from .lifecycle import REDIS_LOST, RESTARTED_BEFORE_START
from .models import Generation

log = logging.getLogger(__name__)
FOLLOW_BLOCK_MS = 500
MAX_DISPATCHES = 3  # a worker that stops before taking the job: try a fresh one
LEASE_RENEW_S = 5.0  # well inside the orchestrator's lease TTL (30 s)
STALE_GRANT_POLL_S = 0.25


class Run:
    """Generations from start to end: a lease on their models, their jobs, their streams, their outcomes.

    Subclasses adjust what the user reads (`KEPT_STOPPING`, `CRASHED`, `unavailable_reason`,
    `loading_fields`) and add what happens once the run is over (`after`)."""

    KEPT_STOPPING = "The model worker kept stopping before it could start. Try again."
    CRASHED = "An internal error stopped this generation."

    def __init__(self, gens: list[Generation], request_id: str):
        self.followers = [Follower(gen) for gen in gens]
        self.request_id = request_id  # the lease's id: one per run, released when it ends
        self.redis, self.keys = self.followers[0].redis, self.followers[0].keys
        self.specs = list({gen.model.slug: gen.model.spec() for gen in gens}.values())

    def run(self) -> None:
        try:
            for _ in range(MAX_DISPATCHES):
                pending = self.pending()
                if not pending:
                    break
                workers = self._acquire()
                self._dispatch(pending, workers)
                self._follow(pending)
            self._fail_pending(p.WORKER_DIED, self.KEPT_STOPPING)
        except orch.WorkerUnavailable as exc:
            reason = self.unavailable_reason(str(exc))
            for follower in self.pending():
                follower.unavailable(reason)
        except redis.RedisError:  # down for longer than the client's retries ride out
            log.exception("Run %s lost Redis", self.request_id)
            self._fail_pending(p.ENGINE_ERROR, REDIS_LOST)
        except Exception:  # never leave a generation running forever
            log.exception("Run %s crashed", self.request_id)
            self._fail_pending(p.ENGINE_ERROR, self.CRASHED)
        finally:
            self._release()
            self.after()
            self._admit_next()

    def _admit_next(self) -> None:
        """This run's slots are free: start whoever is next in line now, not at the next tick."""
        admission.admit_waiting()

    # --- hooks ----------------------------------------------------------------------
    def unavailable_reason(self, reason: str) -> str:
        """What the sides say when no worker could be had ("cancelled" when the user stopped)."""
        return reason

    def loading_fields(self, follower: Follower, elapsed: float, progress: str) -> dict:
        """The LOADING event a side's viewers get about once a second while the models load."""
        return {"elapsed_s": round(elapsed, 1), "model": follower.gen.model.name, "progress": progress}

    def after(self) -> None:
        """Once every side has ended (and the lease is released)."""

    # --- steps ----------------------------------------------------------------------
    def pending(self) -> list[Follower]:
        return [f for f in self.followers if not f.done]

    def _fail_pending(self, code: str, reason: str) -> None:
        for follower in self.pending():
            follower.fail(code, reason)

    def _acquire(self) -> dict[str, str]:
        """The lease's workers. After a worker stopped, the lease may still name it until the
        orchestrator notices (within a tick): such a grant is waited out, not sent a job."""
        started = time.time()
        while True:
            workers = orch.acquire(
                self.redis, self.keys, self.request_id, self.specs,
                timeout_s=settings.ARENA_LOAD_TIMEOUT_S,
                on_wait=self._waiting,
                should_cancel=lambda: any(f.cancel_requested() for f in self.followers),
            )
            if not any(orch.worker_failure(self.redis, self.keys, w) for w in workers.values()):
                break
            if time.time() - started > settings.ARENA_LOAD_TIMEOUT_S:
                raise orch.WorkerUnavailable("The model worker stopped and no other one was started.")
            time.sleep(STALE_GRANT_POLL_S)
        waited = time.time() - started
        own = orch.ready_after(self.redis, self.keys, self.request_id)
        for follower in self.followers:  # a retry's wait adds to the first one's
            follower.waited(waited, own.get(follower.gen.model.slug))
        return workers

    def _waiting(self, elapsed: float, progress: str) -> None:
        for follower in self.followers:
            lifecycle.tell(follower.gen, self.redis, p.LOADING, **self.loading_fields(follower, elapsed, progress))

    def _dispatch(self, followers: list[Follower], workers: dict[str, str]) -> None:
        """Every job in one round trip, so no side starts ahead of another."""
        pipe = self.redis.pipeline()
        for follower in followers:
            follower.dispatch(workers[follower.gen.model.slug], pipe)
        pipe.execute()

    def _follow(self, followers: list[Follower]) -> None:
        """Until every side has ended or lost its worker before starting (then a retry)."""
        renewed = time.time()
        while live := [f for f in followers if not f.done and not f.needs_retry]:
            for follower, events in read_many(live, FOLLOW_BLOCK_MS).items():
                for ev in events:
                    follower.handle(ev)
            for follower in live:
                follower.check()
            if time.time() - renewed >= LEASE_RENEW_S:
                orch.request_lease(self.redis, self.keys, self.request_id, self.specs)
                renewed = time.time()

    def _release(self) -> None:
        try:
            orch.release_lease(self.redis, self.keys, self.request_id)
        except redis.RedisError:  # unrenewed, the lease lapses by itself
            log.warning("Could not release the lease of run %s", self.request_id)


class Follower:
    """One generation's side of the work once it has a worker: hand it the job, read its
    event stream, notice the worker dying or every viewer leaving. How it ends is written
    by lifecycle.py, as for every generation.

    A `Run` drives one per side, all off one stream read (`read_many`).

    While it follows, it keeps the generation's watch key alive (`keep_watch`): the
    sweeper (arena/generations/sweeper.py) ends generations whose follower has gone (a
    Celery worker killed), and the key coming back empty tells this follower that Redis
    restarted and lost what it held (a job not yet taken, the viewers, the cancel flags)."""

    def __init__(self, gen: Generation):
        self.gen = gen
        self.redis = streams.client()
        self.keys = streams.keys()
        self.stream = self.keys.stream(str(gen.id))
        self.last_id = "0"
        self.streamed = p.StreamedText()  # the partial answer kept if its worker dies
        self.worker_id = ""
        self.started = False
        self.done = False
        self.needs_retry = False  # the worker went away before it took the job
        self.deadline = time.time() + settings.ARENA_GENERATION_TIMEOUT_S
        self.watch_key = self.keys.watch(str(gen.id))
        self.watching = False  # set once: from then on a missing key means Redis lost it
        self.pair_wait_s = 0.0  # ready, waiting for the other side's model (`waited`)

    # --- steps ----------------------------------------------------------------------
    def waited(self, waited: float, own: float | None) -> None:
        """The lease took `waited` seconds; this side's own model was ready after `own` of them (None:
        the orchestrator did not say). Its load is its own model's; the rest it waited for the other
        side's (a battle's sides start together), recorded apart as `pair_wait_s`."""
        load = waited if own is None else min(waited, own)
        self.gen.record_load_wait((self.gen.load_wait_s or 0.0) + load)
        self.pair_wait_s += waited - load

    def job(self) -> Job:
        return Job(str(self.gen.id), self.gen.messages(), self.gen.sampling_params(), enqueued_at=time.time())

    def dispatch(self, worker_id: str, pipe) -> None:
        """Queue the job on `pipe` (a Redis pipeline, or the client itself) for the worker."""
        self.worker_id, self.needs_retry = worker_id, False
        pipe.rpush(self.keys.worker_jobs(worker_id), self.job().to_json())

    def handle(self, ev: dict) -> None:
        kind = ev["type"]
        if kind == p.STARTED and not self.started:
            self.started = True
            lifecycle.answering(self.gen)
        elif kind == p.TOKEN:
            self.streamed.add(ev)
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
            self.catch_up()
            if not self.done:  # the stream may already end: the worker finished just before it went
                self.fail(p.WORKER_DIED, f"{failure} The partial answer was kept; send again to retry.")
            return
        self.check_abandoned()
        if time.time() > self.deadline:
            self.fail(p.TIMEOUT, f"Stopped after {settings.ARENA_GENERATION_TIMEOUT_S:.0f} s.")
            self.stop_worker_job("timeout")

    def catch_up(self) -> None:
        """Handle what the stream holds past the last read: the worker may have written tokens
        after it (viewers saw them) before it died, and the partial answer kept must be theirs."""
        last = self.last_id.decode() if isinstance(self.last_id, bytes) else str(self.last_id)
        for entry_id, fields in self.redis.xrange(self.stream, min="-" if last == "0" else f"({last}") or ():
            if entry_id is None or fields is None:
                continue
            self.last_id = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
            self.handle(p.parse_event(fields))
            if self.done:
                return

    def check_abandoned(self) -> None:
        """A web generation whose every viewer left more than the grace ago is cancelled."""
        if self.gen.origin != Generation.Origin.WEB:
            return
        if lifecycle.abandoned(self.redis.hmget(self.keys.viewers(str(self.gen.id)), ["left_at", "count"])):
            services.cancel([self.gen.id], "abandoned", self.redis)

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
        services.cancel([self.gen.id], why, self.redis)

    # --- outcomes (written by lifecycle.py) -------------------------------------------
    def store_outcome(self, ev: dict) -> None:
        extra = {"pair_wait_s": round(self.pair_wait_s, 3)} if self.pair_wait_s else None
        lifecycle.store_event(self.gen, ev, self.streamed.text, self.redis, extra_metrics=extra)

    def unavailable(self, reason: str) -> None:
        """No worker could be had: cancelled by the user, or failed with the orchestrator's reason."""
        if self.done:
            return
        if reason == "cancelled":
            lifecycle.cancel(self.gen, self.redis)
        else:
            lifecycle.fail(self.gen, p.LOAD_FAILED, reason, self.redis, text=self.streamed.text)
        self.done = True

    def fail(self, code: str, reason: str) -> None:
        self.done = True
        lifecycle.fail(self.gen, code, reason, self.redis, text=self.streamed.text)


def read_many(followers: list[Follower], block_ms: int) -> dict[Follower, list[dict]]:
    """One blocking read over several generations' streams: each follower's new events."""
    by_stream = {f.stream: f for f in followers}
    reply = followers[0].redis.xread({f.stream: f.last_id for f in followers}, block=block_ms, count=500)
    assert not isinstance(reply, dict)  # a map in RESP3 only: ours speak RESP2, a list of [stream, entries]
    events: dict[Follower, list[dict]] = {}
    for stream, entries in reply or []:
        follower = by_stream[stream.decode() if isinstance(stream, bytes) else stream]
        for entry_id, fields in entries:
            follower.last_id = entry_id
            events.setdefault(follower, []).append(p.parse_event(fields))
    return events
