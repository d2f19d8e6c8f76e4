"""Running a battle: lease both models together, hand both workers their job in the
same instant, and follow both streams to the end with one read."""

from __future__ import annotations

import logging
import time

import redis
from celery import shared_task
from django.conf import settings

from arena.playground.models import Generation
from arena.playground.tasks import FOLLOW_BLOCK_MS, MAX_DISPATCHES, REDIS_LOST, Follower, read_many
from inference import protocol as p
from orchestration import client as orch

from .models import Battle

log = logging.getLogger(__name__)
LEASE_RENEW_S = 5.0  # well inside the orchestrator's lease TTL (30 s)


@shared_task(ignore_result=True, soft_time_limit=3600, time_limit=3700)
def run_battle(battle_id: str) -> None:
    battle = Battle.objects.select_related("left__model", "right__model").filter(id=battle_id).first()
    if battle is None:
        return
    if not all(gen.claim(Generation.Status.QUEUED, Generation.Status.LOADING) for _side, gen in battle.sides):
        return  # another task has it (or the user stopped it first)
    BattleRun(battle).run()


class BattleRun:
    def __init__(self, battle: Battle):
        self.battle = battle
        self.followers = [Follower(battle.left), Follower(battle.right)]
        self.lease_id = f"battle:{battle.id}"
        self.redis, self.keys = self.followers[0].redis, self.followers[0].keys
        self.specs = list({gen.model.slug: gen.model.spec() for _side, gen in battle.sides}.values())

    def run(self) -> None:
        try:
            for _ in range(MAX_DISPATCHES):
                pending = [f for f in self.followers if not f.done]
                if not pending:
                    break
                workers = self._acquire()
                self._dispatch(pending, workers)
                self._follow(pending)
            for follower in self.followers:
                if not follower.done:
                    follower.fail(p.WORKER_DIED, "The model worker kept stopping before it could start. Run it again.")
        except orch.WorkerUnavailable as exc:
            for follower in self.followers:
                if not follower.done:
                    follower.unavailable(str(exc) if not self.battle.blind or str(exc) == "cancelled"
                                         else "A contestant's model could not be started. Run the match again.")
        except redis.RedisError:  # down for longer than the client's retries ride out
            log.exception("Battle %s lost Redis", self.battle.id)
            for follower in self.followers:
                if not follower.done:
                    follower.fail(p.ENGINE_ERROR, REDIS_LOST)
        except Exception:  # never leave a battle running forever
            log.exception("Battle %s crashed", self.battle.id)
            for follower in self.followers:
                if not follower.done:
                    follower.fail(p.ENGINE_ERROR, "An internal error stopped this battle.")
        finally:
            try:
                orch.release_lease(self.redis, self.keys, self.lease_id)
            except redis.RedisError:  # unrenewed, the lease lapses by itself
                log.warning("Could not release the lease of battle %s", self.battle.id)
            self._after()

    def _acquire(self) -> dict[str, str]:
        started = time.time()
        workers = orch.acquire(
            self.redis, self.keys, self.lease_id, self.specs,
            timeout_s=settings.ARENA_LOAD_TIMEOUT_S,
            on_wait=self._waiting,
            should_cancel=lambda: any(f.cancel_requested() for f in self.followers),
        )
        for follower in self.followers:
            follower.gen.load_wait_s = time.time() - started
        return workers

    def _waiting(self, elapsed: float, progress: str) -> None:
        # A blind battle says nothing of which model loads or how (an AWQ quantisation
        # would name itself): only that both are being prepared.
        fields = {"elapsed_s": round(elapsed, 1)} if self.battle.blind else {"elapsed_s": round(elapsed, 1),
                                                                             "progress": progress}
        for follower in self.followers:
            follower.emit(p.LOADING, **fields)

    def _dispatch(self, followers: list[Follower], workers: dict[str, str]) -> None:
        """Both jobs in one round trip, so neither side starts ahead of the other."""
        pipe = self.redis.pipeline()
        for follower in followers:
            follower.worker_id, follower.needs_retry = workers[follower.gen.model.slug], False
            pipe.rpush(self.keys.worker_jobs(follower.worker_id), follower.job().to_json())
        pipe.execute()

    def _follow(self, followers: list[Follower]) -> None:
        renewed = time.time()
        while live := [f for f in followers if not f.done and not f.needs_retry]:
            for follower, events in read_many(live, FOLLOW_BLOCK_MS).items():
                for ev in events:
                    follower.handle(ev)
            for follower in live:
                follower.check()
            if time.time() - renewed >= LEASE_RENEW_S:
                orch.request_lease(self.redis, self.keys, self.lease_id, self.specs)
                renewed = time.time()

    def _after(self) -> None:
        for _side, gen in self.battle.sides:
            gen.refresh_from_db()
        self.battle.note_self_identification()
