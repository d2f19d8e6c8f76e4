"""Running a generation: get a worker from the orchestrator, hand it the job, follow
its event stream to the end and store the outcome. The stream is the source of truth
for browsers; this task is what makes the database agree with it."""

from __future__ import annotations

import logging
import time

from celery import shared_task
from django.conf import settings

from arena import streams
from inference import protocol as p
from inference.protocol import Job
from orchestration import client as orch

from .models import Generation

log = logging.getLogger(__name__)
FOLLOW_BLOCK_MS = 500
MAX_DISPATCHES = 3  # a worker that stops before taking the job: try a fresh one


@shared_task(ignore_result=True, soft_time_limit=3600, time_limit=3700)
def run_generation(generation_id: str) -> None:
    gen = Generation.objects.select_related("model").filter(id=generation_id).first()
    if gen is None or not gen.claim(Generation.Status.QUEUED, Generation.Status.LOADING):
        return  # gone, or another task already has it
    GenerationRun(gen).run()


class GenerationRun:
    def __init__(self, gen: Generation):
        self.gen = gen
        self.redis = streams.client()
        self.keys = streams.keys()
        self.stream = self.keys.stream(str(gen.id))
        self.last_id = "0"
        self.text: list[str] = []
        self.deadline = time.time() + settings.ARENA_GENERATION_TIMEOUT_S

    def run(self) -> None:
        try:
            for _ in range(MAX_DISPATCHES):
                if self._dispatch_and_follow():
                    return
            self._fail(p.WORKER_DIED, "The model worker kept stopping before it could start. Try again.")
        except orch.WorkerUnavailable as exc:
            if str(exc) == "cancelled":
                self._emit(p.CANCELLED, text="", metrics={})
                self.gen.finish(Generation.Status.CANCELLED, text="")
            else:
                self._fail(p.LOAD_FAILED, str(exc))
        except Exception:  # never leave a generation running forever
            log.exception("Generation %s crashed", self.gen.id)
            self._fail(p.ENGINE_ERROR, "An internal error stopped this generation.")

    # --- steps ----------------------------------------------------------------------
    def _dispatch_and_follow(self) -> bool:
        """Returns False when the worker went away before starting the job (retry)."""
        spec = self.gen.model.spec()
        started = time.time()
        worker_id = orch.wait_for_worker(
            self.redis, self.keys, spec,
            timeout_s=settings.ARENA_LOAD_TIMEOUT_S,
            on_wait=lambda elapsed, progress: self._emit(
                p.LOADING, elapsed_s=round(elapsed, 1), model=self.gen.model.name, progress=progress
            ),
            should_cancel=self._cancel_requested,
        )
        self.gen.load_wait_s = time.time() - started
        job = Job(str(self.gen.id), self.gen.messages(), self.gen.sampling_params(), enqueued_at=time.time())
        self.redis.rpush(self.keys.worker_jobs(worker_id), job.to_json())
        return self._follow(worker_id)

    def _follow(self, worker_id: str) -> bool:
        started = False
        while True:
            for ev in self._read_events():
                kind = ev["type"]
                if kind == p.STARTED and not started:
                    started = True
                    self.gen.claim(Generation.Status.LOADING, Generation.Status.RUNNING, load_wait_s=self.gen.load_wait_s)
                elif kind == p.TOKEN:
                    self.text.append(ev.get("text", ""))
                elif kind in p.TERMINAL_EVENTS:
                    self._finish_from(ev)
                    return True
            failure = orch.worker_failure(self.redis, self.keys, worker_id)
            if failure:
                if not started:
                    return False
                self._fail(p.WORKER_DIED, f"{failure} The partial answer was kept; send again to retry.")
                return True
            self._check_abandoned()
            if time.time() > self.deadline:
                self.redis.set(self.keys.cancel(str(self.gen.id)), "timeout", ex=p.STREAM_TTL_S)
                self._fail(p.TIMEOUT, f"Stopped after {settings.ARENA_GENERATION_TIMEOUT_S:.0f} s.")
                return True

    def _read_events(self) -> list[dict]:
        reply = self.redis.xread({self.stream: self.last_id}, block=FOLLOW_BLOCK_MS, count=500)
        events = []
        for _stream, entries in reply or []:
            for entry_id, fields in entries:
                self.last_id = entry_id
                events.append(p.parse_event(fields))
        return events

    def _check_abandoned(self) -> None:
        """A web generation whose every viewer left more than the grace ago is cancelled."""
        if self.gen.origin != Generation.Origin.WEB:
            return
        left_at = self.redis.hget(self.keys.viewers(str(self.gen.id)), "left_at")
        count = self.redis.hget(self.keys.viewers(str(self.gen.id)), "count")
        if left_at and int(count or 0) <= 0 and time.time() - float(left_at) > settings.ARENA_DISCONNECT_GRACE_S:
            self.redis.set(self.keys.cancel(str(self.gen.id)), "abandoned", ex=p.STREAM_TTL_S)

    def _cancel_requested(self) -> bool:
        self._check_abandoned()
        return bool(self.redis.exists(self.keys.cancel(str(self.gen.id))))

    # --- outcomes -------------------------------------------------------------------
    def _finish_from(self, ev: dict) -> None:
        kind = ev["type"]
        metrics = ev.get("metrics") or {}
        if kind == p.DONE:
            self.gen.finish(Generation.Status.DONE, text=ev.get("text", "".join(self.text)),
                            finish_reason=ev.get("finish_reason", ""), metrics=metrics)
        elif kind == p.CANCELLED:
            self.gen.finish(Generation.Status.CANCELLED, text=ev.get("text", "".join(self.text)),
                            finish_reason="cancelled", metrics=metrics)
        else:
            self.gen.finish(Generation.Status.FAILED, text="".join(self.text), reason=ev.get("reason", "failed"),
                            metrics=metrics)

    def _fail(self, code: str, reason: str) -> None:
        self._emit(p.FAILED, reason=reason, code=code)
        self.gen.finish(Generation.Status.FAILED, text="".join(self.text), reason=reason)

    def _emit(self, kind: str, **fields) -> None:
        self.redis.xadd(self.stream, p.event(kind, **fields))
        self.redis.expire(self.stream, p.STREAM_TTL_S)
