"""The sweeper: no generation stays queued, loading or running forever.

A generation is followed by one Celery task (its run's `Follower`), which renews the
generation's watch key in Redis every half second while it waits for a worker and
while it reads the stream. The key lapses when that task is gone: its Celery worker
was killed, or Redis restarted empty (this project's Redis keeps nothing on disk) and
took the key, the job list and the Celery queue with it. The sweeper looks at every
live generation every few seconds and acts on those whose key has been missing for a
whole watch TTL (a follower that is still alive has renewed it long before then):

- its stream already ends (the worker finished after its follower died): store that
  outcome, as the follower would have (lifecycle.store_event);
- admitted from the line (admission.py) but still queued, so no task ever picked it up (its
  Celery message went with a restart or with a killed worker's prefetch): after a grace, queue
  it again (the task's claim makes a duplicate message a no-op), and after a longer time give
  up with a reason;
- loading or running: cancel its worker's job (that frees the slot), keep the partial
  answer, and fail it with a reason a user understands, told to open pages as a FAILED
  event on its stream (lifecycle.fail).

Whatever it ends, its run kind is told (arena/generations/runs.py): a battle's side is then
checked as the battle's run would have checked it (an answer naming a contestant flags the battle).

It runs in the orchestrator's loop (a periodic job: arena/scheduler.py): that process always
runs, exactly once, and keeps running while Celery workers are killed and restarted. Why not Celery's `acks_late`
instead: on the Redis transport a killed worker's unacknowledged task comes back only
after the visibility timeout (an hour by default), a Redis restart loses it anyway, and
a redelivered follower could not resume a half-streamed answer; the task's conditional
claim (queued -> loading) already makes the sweeper's requeue safe. `decide` is the whole policy,
pure and tested with a fake clock; `Sweeper` reads the state and applies it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
from django.conf import settings

from arena import streams
from inference import protocol as p

from . import lifecycle, runs, services
from .lifecycle import NEVER_STARTED, RESTARTED, RESTARTED_LOADING
from .models import Generation

log = logging.getLogger(__name__)
SWEEP_EVERY_S = 2.0

# Actions.
KEEP = "keep"
ADOPT = "adopt"  # store the outcome the stream already holds
REQUEUE = "requeue"
FAIL = "fail"


@dataclass(frozen=True)
class Policy:
    watch_ttl_s: float = 15.0  # a follower renews its key far more often; this long missing: gone
    queue_grace_s: float = 60.0  # queued this long with nobody following: queue it again
    queue_timeout_s: float = 900.0  # queued this long: give up

    @classmethod
    def from_settings(cls) -> Policy:
        return cls(watch_ttl_s=settings.ARENA_WATCH_TTL_S, queue_grace_s=settings.ARENA_QUEUE_GRACE_S,
                   queue_timeout_s=settings.ARENA_QUEUE_TIMEOUT_S)


@dataclass(frozen=True)
class Seen:
    """What the sweeper knows of one live generation."""

    status: str  # queued | loading | running
    age_s: float  # since it was admitted (left the line for a free slot)
    missing_for_s: float | None  # how long its watch key has been seen missing; None: present
    last_event: str = ""  # the type of the last event on its stream ("" if none)


def decide(seen: Seen, policy: Policy) -> tuple[str, str]:
    """(action, the reason a FAIL gives the user)."""
    if seen.missing_for_s is None or seen.missing_for_s < policy.watch_ttl_s:
        return KEEP, ""
    if seen.last_event in p.TERMINAL_EVENTS:
        return ADOPT, ""
    if seen.status == Generation.Status.QUEUED:
        if seen.age_s < policy.queue_grace_s:
            return KEEP, ""  # Celery has not picked it up yet: that is not a fault
        if seen.age_s < policy.queue_timeout_s:
            return REQUEUE, ""
        return FAIL, NEVER_STARTED
    if seen.status == Generation.Status.LOADING:
        return FAIL, RESTARTED_LOADING
    return FAIL, RESTARTED


class Sweeper:
    """Applies `decide` to the live generations; `sweep` is a periodic job (arena/scheduler.py)."""

    def __init__(self, client: redis.Redis | None = None, policy: Policy | None = None,
                 clock: Callable[[], float] = time.time):
        self.redis = client or streams.client()
        self.keys = streams.keys()
        self.policy = policy or Policy.from_settings()
        self.clock = clock
        self.missing_since: dict[str, float] = {}  # generation id -> when its key was first seen missing

    def sweep(self) -> dict[str, int]:
        """One pass; how many generations each action was applied to."""
        now = self.clock()
        # One still waiting in line for a free slot is the admission's (admission.py), not a fault.
        live = list(Generation.objects.filter(status__in=Generation.live_statuses())
                    .exclude(status=Generation.Status.QUEUED, admitted_at__isnull=True)
                    .values_list("id", "status", "admitted_at"))
        ids = [str(gen_id) for gen_id, _status, _admitted in live]
        pipe = self.redis.pipeline(transaction=False)
        for gen_id in ids:
            pipe.exists(self.keys.watch(gen_id))
        watched = dict(zip(ids, pipe.execute(), strict=True))
        for gen_id in list(self.missing_since):
            if watched.get(gen_id, 1):  # renewed, or no longer live
                del self.missing_since[gen_id]
        counts: dict[str, int] = {}
        for gen_id, status, admitted_at in live:
            gen_id = str(gen_id)
            if watched[gen_id]:
                continue
            since = self.missing_since.setdefault(gen_id, now)
            seen = Seen(status, now - admitted_at.timestamp() if admitted_at else 0.0, now - since,
                        self._last_event(gen_id))
            action, reason = decide(seen, self.policy)
            if action != KEEP:
                self._apply(gen_id, action, reason)
                counts[action] = counts.get(action, 0) + 1
        return counts

    def _last_event(self, gen_id: str) -> str:
        entries = self.redis.xrevrange(self.keys.stream(gen_id), count=1)
        fields = entries[0][1] if entries else None
        return p.parse_event(fields)["type"] if fields is not None else ""

    def _apply(self, gen_id: str, action: str, reason: str) -> None:
        gen = Generation.objects.select_related("model").filter(id=gen_id).first()
        if gen is None or gen.finished:
            return
        if action == REQUEUE:
            if not self.redis.exists(self.keys.watch(gen_id)):  # its battle's other side may have just done it
                self._requeue(gen)
            return
        events = [p.parse_event(fields) for _id, fields in self.redis.xrange(self.keys.stream(gen_id)) or ()
                  if fields is not None]
        streamed = p.streamed_text(events)
        if action == ADOPT:
            log.warning("Generation %s: its follower is gone; storing the outcome its stream holds", gen_id)
            lifecycle.store_event(gen, events[-1], streamed, self.redis)
        else:
            log.warning("Generation %s (%s): nobody follows it any more; failing it", gen_id, gen.status)
            lifecycle.fail(gen, p.WORKER_DIED, reason, self.redis, text=streamed)
            services.cancel([gen.id], "swept", self.redis)  # the worker may still be writing it: free its slot now
        self.missing_since.pop(gen_id, None)
        runs.ended_elsewhere(gen)  # as its own run would have, had it lived

    def _requeue(self, gen: Generation) -> None:
        """Send its run's task again; the task's claim (queued -> loading) makes a duplicate harmless."""
        kind = runs.get(gen.run_kind)
        if kind.grouped and gen.run_id is not None:  # the whole run starts again, together
            kind.start(str(gen.run_id))
            requeued = [str(gen_id) for gen_id in Generation.objects.filter(
                run_kind=gen.run_kind, run_id=gen.run_id).values_list("id", flat=True)]
        else:
            kind.start(str(gen.id))
            requeued = [str(gen.id)]
        log.warning("Generation %s was never picked up; queued again", gen.id)
        for gen_id in requeued:  # not again before another grace: the key stands for "just queued"
            self.redis.set(self.keys.watch(gen_id), "requeued", px=int(self.policy.queue_grace_s * 1000))
            self.missing_since.pop(gen_id, None)
