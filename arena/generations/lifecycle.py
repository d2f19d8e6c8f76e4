"""A generation's life: its states, the moves between them, the reasons a user reads when the
machinery (not the model) ended it, and the one way each move is written.

    queued ──begin──> loading ──answering──> running
      │                  │                      │
      └──────────────────┴──────── end ─────────┴──> done | failed | cancelled

- `begin`: a run's Celery task takes its admitted generation (queued -> loading); a second task
  for the same generation (a requeue, a duplicate message) finds it taken and leaves it.
- `answering`: its worker started the answer (loading -> running).
- `from_cache`: a new generation whose identical request was answered before (cache.py) ends at
  once with that answer (queued -> done), before it ever joins the line: no worker, no place.
- the end, once, by whoever comes first (each write is conditional on the row still being live):
  `store_event`: the stream already ends with a terminal event (the worker's DONE, CANCELLED or
  FAILED): store it; the viewers have it. Its run's Follower does this, and the sweeper for a
  run that died after its worker finished.
  `fail`: store a failure, then tell the viewers (a FAILED event on the stream). Its run (no
  worker, a worker that died, the time limit, Redis lost), the line (a run that will never
  start) and the sweeper (a run whose process died) do this.
  `cancel`: store that it was stopped before its answer began, then tell the viewers. Its run
  (stopped while its model loaded) and the line (stopped or abandoned while waiting).

Who ends what: the run that follows a generation knows how it ends while it lives; the line
ends the waiting ones; the sweeper keeps only what neither can know, a process that died (its
watch key lapsed). `Generation.claim` and `Generation.finish` are the row-level writes, called
from here alone.
"""

from __future__ import annotations

import logging
import time

import redis
from django.conf import settings
from django.utils import timezone

from arena import streams
from inference import protocol as p
from inference.transport import WORKER_STOPPING

from . import status
from .models import Generation

log = logging.getLogger(__name__)
S = Generation.Status

# The moves a live generation may make besides ending; any live state may end.
MOVES = {S.QUEUED: S.LOADING, S.LOADING: S.RUNNING}

# What users read when the machinery, not the model, ended their generation.
REDIS_LOST = ("The server lost its connection to Redis while writing this answer; the partial answer was kept. "
              "Send again.")
RESTARTED_BEFORE_START = "The server restarted before this answer started. Send again."
WORKER_STOPPED = WORKER_STOPPING  # the worker's own words when it ends a request nobody cancelled
RESTARTED = ("The server restarted while this answer was being written; the partial answer was kept. "
             "Send again.")
RESTARTED_LOADING = "The server restarted while the model was being prepared for this answer. Send again."
NEVER_STARTED = "This request waited too long for a free slot and never started. Send again."
HALF_A_BATTLE = "The other side of this comparison ended before it started. Run it again."


def abandoned(viewers: list) -> bool:
    """From a generation's viewers hash ([left_at, count]): every viewer left more than the grace ago
    (a web generation nobody watches any more is cancelled, waiting or running)."""
    left_at, count = viewers
    return bool(left_at) and int(count or 0) <= 0 and time.time() - float(left_at) > settings.ARENA_DISCONNECT_GRACE_S


def _move(gen: Generation, to: str, **fields) -> bool:
    """One of `MOVES`, by conditional update (with `fields`): False when the row was no longer where the move starts."""
    [start] = [state for state, then in MOVES.items() if then == to]
    return gen.claim(start, to, **fields)


def begin(gen: Generation) -> bool:
    """Its run's task takes it (queued -> loading); False: another task has it, or it has ended."""
    return _move(gen, S.LOADING)


def answering(gen: Generation) -> bool:
    """Its worker started the answer (loading -> running), now (`started_at`)."""
    return _move(gen, S.RUNNING, started_at=timezone.now())


def store_event(gen: Generation, ev: dict, streamed: str, client: redis.Redis, *,
                extra_metrics: dict | None = None) -> bool:
    """Store the outcome the stream's terminal event `ev` holds (the viewers have it already);
    `streamed`: the tokens' text, for an event that carries none. False: it had ended already."""
    metrics = {**(ev.get("metrics") or {}), **(extra_metrics or {})}
    text = ev.get("text", streamed)
    kind = ev["type"]
    if kind == p.DONE:
        return gen.finish(S.DONE, text=text, finish_reason=ev.get("finish_reason", ""), metrics=metrics)
    if kind == p.CANCELLED and not client.exists(streams.keys().cancel(str(gen.id))):
        # Nobody asked: the worker cancelled it because it was being stopped itself
        # (its orchestrator went away, the server is shutting down). Not the user's doing.
        return gen.finish(S.FAILED, text=text, reason=WORKER_STOPPED, metrics=metrics)
    if kind == p.CANCELLED:
        return gen.finish(S.CANCELLED, text=text, finish_reason="cancelled", metrics=metrics,
                          reason=cancelled_why(gen, client))
    return gen.finish(S.FAILED, text=streamed, reason=ev.get("reason", "failed"), metrics=metrics)


def from_cache(gen: Generation) -> bool:
    """`gen`, just created queued with `cached_from` set (in the transaction that created it), ends as
    done with that original's stored answer: its text, finish reason, token counts and speeds (the
    metrics they are read from). The viewers need no event: it is finished before anyone can open
    it, and a finished generation's page reads the database."""
    original = gen.cached_from
    assert original is not None and original.status == S.DONE, "only a done answer is reused"
    return gen.finish(S.DONE, text=original.text, finish_reason=original.finish_reason,
                      metrics=dict(original.metrics or {}))


def fail(gen: Generation, code: str, reason: str, client: redis.Redis, *, text: str = "") -> bool:
    """Store the failure, then tell the viewers (if Redis can be reached: the database must have it
    either way, and a viewer whose stream is gone reads it from there). False: it had ended already,
    and whoever ended it told the viewers."""
    if not gen.finish(S.FAILED, text=text, reason=reason):
        return False
    try:
        tell(gen, client, p.FAILED, reason=gen.failure_reason, code=code)  # as stored: no path, no traceback
    except redis.RedisError as exc:
        log.warning("Could not tell the viewers of generation %s that it failed: %s", gen.id, exc)
    return True


def cancel(gen: Generation, client: redis.Redis) -> bool:
    """Stopped before its answer began (no worker had it): store it, then tell the viewers."""
    if not gen.finish(S.CANCELLED, text="", reason=cancelled_why(gen, client)):
        return False
    tell(gen, client, p.CANCELLED, text="", metrics={})
    return True


def cancelled_why(gen: Generation, client: redis.Redis) -> str:
    """The reason a cancelled row stores: the page closing is told apart from Stop (status.py)."""
    why = client.get(streams.keys().cancel(str(gen.id)))
    return status.cancel_reason(why.decode() if isinstance(why, bytes) else why or "")


def tell(gen: Generation, client: redis.Redis, kind: str, **fields) -> None:
    """An event on the generation's stream, for its viewers."""
    stream = streams.keys().stream(str(gen.id))
    client.xadd(stream, p.event(kind, **fields))
    client.expire(stream, p.STREAM_TTL_S)
