"""The one request path (arena/generations/run.py) against real Redis and the database, the
test playing the orchestrator (granting or refusing the lease, as its service writes it) and
the worker (taking the job, writing the stream). The real ones run in tests/live."""

import json
import threading
import time

import pytest
from django.db import close_old_connections, connection

from arena import streams
from arena.battles.actions import start_battle
from arena.battles.tasks import BLIND_UNAVAILABLE, BattleRun
from arena.generations.models import Generation
from arena.generations.run import MAX_DISPATCHES, Run
from inference import protocol as p
from inference.protocol import Job

pytestmark = pytest.mark.django_db(transaction=True)
S = Generation.Status


class Driven:
    """A run in its own thread (it blocks, as in its Celery task), with the test's hands on Redis."""

    def __init__(self, run: Run):
        self.run, self.redis, self.keys = run, streams.client(), streams.keys()
        self.redis.delete(self.keys.orchestrator_inbox())  # this session's Redis prefix outlives one test
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self):
        try:
            self.run.run()
        finally:
            connection.close()

    def join(self) -> None:
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()
        close_old_connections()

    def inbox(self) -> list[dict]:
        return [json.loads(m) for m in self.redis.lrange(self.keys.orchestrator_inbox(), 0, -1)]

    def wait_for(self, predicate, what: str, timeout_s: float = 10):
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if found := predicate():
                return found
            time.sleep(0.05)
        raise AssertionError(f"never: {what}")

    def grant(self, workers: dict[str, str], ready_after: dict[str, float] | None = None) -> None:
        """As the orchestrator grants: `ready_after`, each model's own wait (orchestration/service.py)."""
        self.wait_for(lambda: any(m["op"] == "lease" for m in self.inbox()), "a lease request")
        granted = {"state": "granted", "workers": json.dumps(workers)}
        if ready_after is not None:
            granted["ready_after"] = json.dumps(ready_after)
        self.redis.hset(self.keys.lease(self.run.request_id), mapping=granted)

    def refuse(self, reason: str) -> None:
        self.wait_for(lambda: any(m["op"] == "lease" for m in self.inbox()), "a lease request")
        self.redis.hset(self.keys.lease(self.run.request_id), mapping={"state": "refused", "reason": reason})

    def take_job(self, worker_id: str) -> Job:
        popped = self.redis.blpop([self.keys.worker_jobs(worker_id)], timeout=10)
        assert popped, f"no job reached {worker_id}"
        return Job.from_json(popped[1])

    def write(self, job: Job, kind: str, **fields) -> None:
        self.redis.xadd(self.keys.stream(job.generation_id), p.event(kind, **fields))

    def answer(self, job: Job, text: str) -> None:
        self.write(job, p.STARTED, prompt_tokens=3, queue_s=0.0)
        self.write(job, p.TOKEN, text=text, n=1)
        self.write(job, p.DONE, text=text, finish_reason="stop", metrics={"generated_tokens": 1})

    def events(self, gen: Generation) -> list[dict]:
        return [p.parse_event(fields) for _id, fields in self.redis.xrange(self.keys.stream(str(gen.id)))]


def claimed(owner, model) -> Generation:
    gen = Generation.objects.create(owner=owner, model=model, prompt="Name a colour.", params={"max_new_tokens": 8})
    assert gen.claim(S.QUEUED, S.LOADING)
    return Generation.objects.select_related("model").get(id=gen.id)


def test_a_single_generation_is_a_one_model_lease_shown_loading_then_answered_and_released(owner, smollm):
    gen = claimed(owner, smollm)
    driven = Driven(Run([gen], f"generation:{gen.id}"))
    driven.wait_for(lambda: any(ev["type"] == p.LOADING for ev in driven.events(gen)), "a loading event")
    driven.grant({smollm.slug: "w-1"})
    job = driven.take_job("w-1")
    assert job.generation_id == str(gen.id) and job.messages[-1]["content"] == "Name a colour."
    driven.answer(job, "Blue.")
    driven.join()
    gen.refresh_from_db()
    assert gen.status == S.DONE and gen.text == "Blue." and gen.load_wait_s > 0
    loading = next(ev for ev in driven.events(gen) if ev["type"] == p.LOADING)
    assert loading["model"] == smollm.name and loading["elapsed_s"] >= 1 and "progress" in loading
    lease = [m for m in driven.inbox() if m["op"] == "lease"]
    assert {m["request_id"] for m in lease} == {f"generation:{gen.id}"} and lease[0]["specs"][0]["slug"] == smollm.slug
    assert driven.inbox()[-1] == {"op": "release", "request_id": f"generation:{gen.id}"}


def test_a_worker_that_keeps_stopping_before_it_starts_is_retried_then_failed(owner, smollm):
    gen = claimed(owner, smollm)
    driven = Driven(Run([gen], f"generation:{gen.id}"))
    for attempt in range(MAX_DISPATCHES):
        worker = f"w-{attempt}"
        driven.grant({smollm.slug: worker})
        driven.take_job(worker)
        driven.redis.hset(driven.keys.worker(worker), mapping={"state": p.W_STOPPED, "error": "gone"})
    driven.join()
    gen.refresh_from_db()
    assert gen.status == S.FAILED and gen.failure_reason == Run.KEPT_STOPPING
    assert driven.events(gen)[-1]["code"] == p.WORKER_DIED
    assert driven.inbox()[-1]["op"] == "release"


def test_a_grant_still_naming_a_stopped_worker_is_waited_out(owner, smollm):
    gen = claimed(owner, smollm)
    redis, keys = streams.client(), streams.keys()
    redis.hset(keys.worker("w-gone"), mapping={"state": p.W_STOPPED, "error": "gone"})
    driven = Driven(Run([gen], f"generation:{gen.id}"))
    driven.grant({smollm.slug: "w-gone"})  # the orchestrator has not noticed yet...
    time.sleep(1)
    driven.grant({smollm.slug: "w-new"})  # ...now it has, and started another
    driven.answer(driven.take_job("w-new"), "Blue.")
    driven.join()
    gen.refresh_from_db()
    assert gen.status == S.DONE and redis.llen(keys.worker_jobs("w-gone")) == 0


def test_a_refused_lease_fails_the_generation_with_the_orchestrators_reason(owner, smollm):
    gen = claimed(owner, smollm)
    driven = Driven(Run([gen], f"generation:{gen.id}"))
    driven.refuse("SmolLM2 needs 900 MB; this node has 500 MB.")
    driven.join()
    gen.refresh_from_db()
    assert gen.status == S.FAILED and gen.failure_reason == "SmolLM2 needs 900 MB; this node has 500 MB."
    assert driven.events(gen)[-1]["code"] == p.LOAD_FAILED


def battle_run(owner, catalogue, blind: bool) -> BattleRun:
    sides = {side: {"model": model, "params": {"max_new_tokens": 8}}
             for side, model in zip(("left", "right"), catalogue[:2], strict=True)}
    battle = start_battle(owner, prompt="Name a colour.", sides=sides, blind=blind)
    for _side, gen in battle.sides:
        assert gen.claim(S.QUEUED, S.LOADING)
    return BattleRun(battle)


def test_a_battle_leases_both_models_at_once_and_hands_both_jobs_over(owner, catalogue):
    run = battle_run(owner, catalogue, blind=False)
    driven = Driven(run)
    driven.grant({catalogue[0].slug: "w-left", catalogue[1].slug: "w-right"})
    driven.answer(driven.take_job("w-left"), "Blue.")
    driven.answer(driven.take_job("w-right"), "Red.")
    driven.join()
    left, right = (Generation.objects.get(id=gen.id) for _side, gen in run.battle.sides)
    assert (left.status, left.text, right.status, right.text) == (S.DONE, "Blue.", S.DONE, "Red.")
    leases = {m["request_id"]: m for m in driven.inbox() if m["op"] == "lease"}
    assert list(leases) == [f"battle:{run.battle.id}"]
    assert {s["slug"] for s in leases[f"battle:{run.battle.id}"]["specs"]} == {catalogue[0].slug, catalogue[1].slug}


def test_each_side_records_its_own_models_load_not_the_pairs_wait(owner, catalogue):
    """Issue 35: the left model was warm, the right one loaded; the pair waited for the right."""
    run = battle_run(owner, catalogue, blind=False)
    driven = Driven(run)
    gens = [gen for _side, gen in run.battle.sides]
    driven.wait_for(lambda: any(ev["type"] == p.LOADING for ev in driven.events(gens[0])), "a loading event")
    driven.grant({catalogue[0].slug: "w-left", catalogue[1].slug: "w-right"},
                 ready_after={catalogue[0].slug: 0.0, catalogue[1].slug: 600.0})  # past the wait: the wait bounds it
    driven.answer(driven.take_job("w-left"), "Blue.")
    driven.answer(driven.take_job("w-right"), "Red.")
    driven.join()
    left, right = (Generation.objects.get(id=gen.id) for gen in gens)
    assert left.load_wait_s == 0.0 and right.load_wait_s >= 1.0  # a LOADING event comes after a second's wait
    assert left.metrics["pair_wait_s"] == pytest.approx(right.load_wait_s, abs=0.01)  # ready, waiting for the right
    assert "pair_wait_s" not in right.metrics


def test_a_blind_battle_hides_the_orchestrators_reason_and_what_loads(owner, catalogue):
    run = battle_run(owner, catalogue, blind=True)
    driven = Driven(run)
    gens = [gen for _side, gen in run.battle.sides]
    driven.wait_for(lambda: all(any(ev["type"] == p.LOADING for ev in driven.events(g)) for g in gens), "loading")
    driven.refuse(f"{catalogue[0].name} (AWQ) failed to quantise.")
    driven.join()
    for gen in gens:
        gen.refresh_from_db()
        assert gen.status == S.FAILED and gen.failure_reason == BLIND_UNAVAILABLE
        loading = [ev for ev in driven.events(gen) if ev["type"] == p.LOADING]
        assert loading and all(set(ev) == {"type", "t", "elapsed_s"} for ev in loading)


def test_a_worker_dying_keeps_the_tokens_it_wrote_after_the_last_read(owner, smollm):
    """The follower reads in blocks; the worker may write on, then die, before the next one. The
    partial answer kept is what the viewers saw (the soak caught a vanished browser holding text
    the store lacked), so the follower reads the rest of the stream before it fails."""
    from arena.generations.run import Follower

    gen = claimed(owner, smollm)
    follower = Follower(gen)
    follower.worker_id, follower.started = "w-gone-9f3c", True
    stream, keys = follower.stream, streams.keys()
    follower.redis.xadd(stream, p.event(p.STARTED, prompt_tokens=3, queue_s=0.0))
    violet = p.event(p.TOKEN, text="Violet", n=1, at=0)
    follower.last_id = follower.redis.xadd(stream, violet)  # the last read
    follower.handle(p.parse_event(violet))
    follower.redis.xadd(stream, violet)  # the same event again (a resend after a Redis restart): not kept twice
    follower.redis.xadd(stream, p.event(p.TOKEN, text=" and indigo", n=2, at=6))  # written before it died
    follower.redis.hset(keys.worker("w-gone-9f3c"), mapping={"state": p.W_FAILED, "error": "Killed by signal 9."})

    follower.check()

    gen.refresh_from_db()
    assert (gen.status, gen.text) == (S.FAILED, "Violet and indigo")
    assert "Killed by signal 9." in gen.failure_reason
