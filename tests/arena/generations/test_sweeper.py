"""The sweeper that ends generations nobody follows any more, and the follower's side of
it (the watch key, a Redis that restarted under it, a worker that stopped by itself).

The policy is a pure function checked against a fake clock; the sweeper and the
follower run on the real database and the real Redis (under this session's prefix),
and a requeued task is read back from the real Celery broker queue."""

import uuid
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from arena import streams
from arena.battles.models import Battle
from arena.generations import lifecycle
from arena.generations import sweeper as sw
from arena.generations.lifecycle import RESTARTED_BEFORE_START, WORKER_STOPPED
from arena.generations.models import Generation
from arena.generations.run import Follower
from inference import protocol as p
from tests.arena.broker import broker_messages
from tests.arena.factories import comparison

POLICY = sw.Policy(watch_ttl_s=15, queue_grace_s=60, queue_timeout_s=900)
S = Generation.Status


def seen(status=S.RUNNING, age_s=120.0, missing_for_s=None, last_event=""):
    return sw.Seen(status, age_s, missing_for_s, last_event)


# --- the policy -----------------------------------------------------------------------
@pytest.mark.parametrize("status", [S.QUEUED, S.LOADING, S.RUNNING])
def test_a_watched_generation_is_kept_however_old(status):
    assert sw.decide(seen(status, age_s=10_000), POLICY) == (sw.KEEP, "")


@pytest.mark.parametrize("missing_for_s", [0.0, 5.0, 14.9])
def test_a_key_missing_for_less_than_the_ttl_is_kept(missing_for_s):
    """A live follower renews it every half second: just after a Redis restart it is
    missing for a moment, and that is not a dead follower."""
    assert sw.decide(seen(missing_for_s=missing_for_s), POLICY) == (sw.KEEP, "")


@pytest.mark.parametrize("status", [S.LOADING, S.RUNNING])
def test_an_unfollowed_generation_fails_with_a_reason_a_user_understands(status):
    action, reason = sw.decide(seen(status, missing_for_s=15.0), POLICY)
    assert action == sw.FAIL
    assert "restarted" in reason and "Send again" in reason
    assert ("partial answer was kept" in reason) == (status == S.RUNNING)


@pytest.mark.parametrize("last_event", [p.DONE, p.FAILED, p.CANCELLED])
@pytest.mark.parametrize("status", [S.QUEUED, S.LOADING, S.RUNNING])
def test_a_stream_that_already_ended_is_adopted_not_failed(status, last_event):
    assert sw.decide(seen(status, missing_for_s=20.0, last_event=last_event), POLICY) == (sw.ADOPT, "")


@pytest.mark.parametrize("last_event", [p.TOKEN, p.STARTED, p.LOADING, ""])
def test_a_stream_still_going_is_not_an_outcome(last_event):
    assert sw.decide(seen(missing_for_s=20.0, last_event=last_event), POLICY)[0] == sw.FAIL


@pytest.mark.parametrize(("age_s", "action"), [(10.0, sw.KEEP), (59.9, sw.KEEP), (60.0, sw.REQUEUE),
                                                (899.0, sw.REQUEUE), (900.0, sw.FAIL)])
def test_a_queued_generation_is_left_to_celery_then_queued_again_then_given_up(age_s, action):
    got, reason = sw.decide(seen(S.QUEUED, age_s=age_s, missing_for_s=30.0), POLICY)
    assert got == action
    assert (reason == lifecycle.NEVER_STARTED) == (action == sw.FAIL)


# --- the sweeper on the real database and Redis -----------------------------------------
class Clock:
    def __init__(self):
        self.now = timezone.now().timestamp()

    def __call__(self):
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def sweeper(redis_client, clock):
    return sw.Sweeper(redis_client, POLICY, clock=clock)


def make_gen(owner, model, status, age_s=120.0, **fields):
    """Admitted `age_s` ago unless told otherwise: out of the line for a free slot, the sweeper's to watch."""
    at = timezone.now() - timedelta(seconds=age_s)
    fields.setdefault("admitted_at", at)
    return Generation.objects.create(owner=owner, model=model, prompt="Tell me a story.", params={}, status=status,
                                     created_at=at, **fields)


def add(redis_client, gen, kind, **fields):
    redis_client.xadd(streams.keys().stream(str(gen.id)), p.event(kind, **fields))


def events(redis_client, gen):
    return [p.parse_event(f) for _id, f in redis_client.xrange(streams.keys().stream(str(gen.id)))]


def test_a_running_generation_whose_follower_died_fails_after_the_ttl_keeping_its_partial_answer(
        sweeper, clock, redis_client, owner, smollm):
    gen = make_gen(owner, smollm, S.RUNNING, started_at=timezone.now())
    add(redis_client, gen, p.STARTED, prompt_tokens=5, queue_s=0.1)
    add(redis_client, gen, p.TOKEN, text="Once upon", n=1)
    add(redis_client, gen, p.TOKEN, text=" a time", n=2)
    assert sweeper.sweep() == {}  # first seen missing now: it may be a Redis that just restarted
    clock.now += 14.9
    assert sweeper.sweep() == {}
    clock.now += 0.1
    assert sweeper.sweep() == {sw.FAIL: 1}
    gen.refresh_from_db()
    assert gen.status == S.FAILED and gen.failure_reason == lifecycle.RESTARTED
    assert gen.text == "Once upon a time" and gen.finished_at
    last = events(redis_client, gen)[-1]
    assert (last["type"], last["reason"], last["code"]) == (p.FAILED, lifecycle.RESTARTED, p.WORKER_DIED)
    assert redis_client.get(streams.keys().cancel(str(gen.id))) == b"swept"  # its worker stops: the slot frees
    clock.now += 30
    assert sweeper.sweep() == {}  # done once; a finished generation is left alone


def test_a_watched_generation_and_finished_ones_are_never_touched(sweeper, clock, redis_client, owner, smollm):
    watched = make_gen(owner, smollm, S.RUNNING)
    stored = make_gen(owner, smollm, S.DONE, text="Stored answer.", finish_reason="stop")
    before = Generation.objects.filter(id=stored.id).values().get()
    for _ in range(5):
        redis_client.set(streams.keys().watch(str(watched.id)), "w1", px=int(POLICY.watch_ttl_s * 1000))
        assert sweeper.sweep() == {}
        clock.now += 10
    watched.refresh_from_db()
    assert watched.status == S.RUNNING
    assert Generation.objects.filter(id=stored.id).values().get() == before


def test_a_key_that_comes_back_resets_the_count(sweeper, clock, redis_client, owner, smollm):
    gen = make_gen(owner, smollm, S.RUNNING)
    sweeper.sweep()
    clock.now += 10
    redis_client.set(streams.keys().watch(str(gen.id)), "w1", px=100)  # its follower renewed it (then lapsed)
    sweeper.sweep()
    redis_client.delete(streams.keys().watch(str(gen.id)))
    clock.now += 10
    assert sweeper.sweep() == {}  # missing 10 s since it was last seen, not 20
    clock.now += 15
    assert sweeper.sweep() == {sw.FAIL: 1}


def test_a_stream_that_ended_after_its_follower_died_is_stored_as_it_ended(
        sweeper, clock, redis_client, owner, smollm):
    gen = make_gen(owner, smollm, S.RUNNING)
    add(redis_client, gen, p.TOKEN, text="Hello", n=1)
    metrics = {"prompt_tokens": 4, "generated_tokens": 1, "decode_tokens_per_s": 12.5}
    add(redis_client, gen, p.DONE, text="Hello", finish_reason="stop", metrics=metrics)
    sweeper.sweep()
    clock.now += 15
    assert sweeper.sweep() == {sw.ADOPT: 1}
    gen.refresh_from_db()
    assert (gen.status, gen.text, gen.finish_reason, gen.generated_tokens) == (S.DONE, "Hello", "stop", 1)
    assert events(redis_client, gen)[-1]["type"] == p.DONE  # nothing added after its end


def test_a_loading_generation_fails_with_the_loading_reason(sweeper, clock, redis_client, owner, smollm):
    gen = make_gen(owner, smollm, S.LOADING)
    add(redis_client, gen, p.LOADING, elapsed_s=1.0, model="SmolLM2", progress="")
    sweeper.sweep()
    clock.now += 15
    sweeper.sweep()
    gen.refresh_from_db()
    assert gen.status == S.FAILED and gen.failure_reason == lifecycle.RESTARTED_LOADING and gen.text == ""


def test_a_queued_generation_nobody_picked_up_is_queued_again_once_per_grace(
        sweeper, clock, redis_client, owner, smollm):
    young = make_gen(owner, smollm, S.QUEUED, age_s=5)
    lost = make_gen(owner, smollm, S.QUEUED, age_s=100)
    sweeper.sweep()
    clock.now += 15
    assert sweeper.sweep() == {sw.REQUEUE: 1}
    assert broker_messages(redis_client) == [("arena.generations.tasks.run_generation", [str(lost.id)])]
    clock.now += 15
    assert sweeper.sweep() == {}  # the young one is still Celery's to pick up; the lost one was just sent
    lost.refresh_from_db()
    young.refresh_from_db()
    assert lost.status == young.status == S.QUEUED


def test_a_generation_still_waiting_in_line_is_not_the_sweepers(sweeper, clock, redis_client, owner, smollm):
    waiting = make_gen(owner, smollm, S.QUEUED, age_s=POLICY.queue_timeout_s + 1, admitted_at=None)
    sweeper.sweep()
    clock.now += 30
    assert sweeper.sweep() == {}  # the line (admission.py) serves it, or ends it when it waited too long
    assert broker_messages(redis_client) == []
    waiting.refresh_from_db()
    assert waiting.status == S.QUEUED


def test_a_queued_battle_is_queued_again_as_one_battle(sweeper, clock, redis_client, owner, smollm):
    battle_id = uuid.uuid4()
    left, right = (make_gen(owner, smollm, S.QUEUED, run_kind=Battle.RUN_KIND, run_id=battle_id) for _ in range(2))
    battle = Battle.objects.create(id=battle_id, owner=owner, left=left, right=right)
    sweeper.sweep()
    clock.now += 15
    assert sweeper.sweep() == {sw.REQUEUE: 1}
    assert broker_messages(redis_client) == [("arena.battles.tasks.run_battle", [str(battle.id)])]


def test_a_generation_queued_too_long_is_given_up(sweeper, clock, redis_client, owner, smollm):
    gen = make_gen(owner, smollm, S.QUEUED, age_s=POLICY.queue_timeout_s + 1)
    sweeper.sweep()
    clock.now += 15
    assert sweeper.sweep() == {sw.FAIL: 1}
    gen.refresh_from_db()
    assert gen.status == S.FAILED and gen.failure_reason == lifecycle.NEVER_STARTED
    assert broker_messages(redis_client) == []


# --- the follower's side ------------------------------------------------------------------
def test_a_follower_keeps_its_watch_and_notices_a_redis_that_lost_it(redis_client, owner, smollm):
    gen = make_gen(owner, smollm, S.LOADING)
    follower = Follower(gen)
    follower.keep_watch()
    assert redis_client.pttl(follower.watch_key) > (POLICY.watch_ttl_s - 1) * 1000
    follower.dispatch("smollm2-135m-0000", follower.redis)  # the job now waits in the worker's list...
    _wipe(redis_client)  # ...which a Redis restart empties
    follower.check()
    gen.refresh_from_db()
    assert follower.done and gen.status == S.FAILED and gen.failure_reason == RESTARTED_BEFORE_START
    assert redis_client.get(streams.keys().cancel(str(gen.id))) == b"restart"  # if the worker had it: cancel
    assert events(redis_client, gen)[-1]["reason"] == RESTARTED_BEFORE_START


def test_a_started_generation_goes_on_after_redis_lost_its_keys(redis_client, owner, smollm):
    gen = make_gen(owner, smollm, S.RUNNING)
    follower = Follower(gen)
    follower.dispatch("smollm2-135m-0000", follower.redis)
    follower.handle({"type": p.STARTED})
    follower.keep_watch()
    _wipe(redis_client)
    follower.check()  # the worker rides the restart out and writes on into a fresh stream
    assert not follower.done
    follower.handle({"type": p.DONE, "text": "All of it.", "finish_reason": "stop", "metrics": {}})
    gen.refresh_from_db()
    assert gen.status == S.DONE and gen.text == "All of it."


def test_a_cancel_nobody_asked_for_is_a_failure_with_a_reason(redis_client, owner, smollm):
    """A worker being stopped (its orchestrator killed, the server shutting down) cancels
    what it runs; the user did not: store a failure that says so."""
    asked, unasked = make_gen(owner, smollm, S.RUNNING), make_gen(owner, smollm, S.RUNNING)
    redis_client.set(streams.keys().cancel(str(asked.id)), "user")
    for gen in (asked, unasked):
        Follower(gen).handle({"type": p.CANCELLED, "text": "Half an", "metrics": {}})
        gen.refresh_from_db()
    assert (asked.status, asked.text, asked.failure_reason) == (S.CANCELLED, "Half an", "")
    assert (unasked.status, unasked.text, unasked.failure_reason) == (S.FAILED, "Half an", WORKER_STOPPED)


def _wipe(redis_client):
    """What a Redis restart does to this session's keys (the shared server is not ours to restart)."""
    for key in redis_client.scan_iter(match=f"{settings.ARENA_REDIS_PREFIX}:*", count=1000):
        redis_client.delete(key)


# --- a battle the sweeper ends is checked for answers naming a contestant ---------------------
def sweep_until_gone(sweeper, clock) -> dict:
    sweeper.sweep()  # first seen missing
    clock.now += POLICY.watch_ttl_s
    return sweeper.sweep()


@pytest.fixture
def running_blind_battle(owner, catalogue) -> Battle:
    """SmolLM2 against Gemma, both running, their battle's run gone."""
    battle = comparison(owner, catalogue[0], catalogue[3], texts=None, mode=Battle.Mode.TOURNAMENT, blind=True)
    Generation.objects.filter(id__in=[battle.left_id, battle.right_id]).update(status=S.RUNNING)
    return battle


def test_the_sweeper_storing_ended_streams_flags_the_battle(sweeper, clock, redis_client, running_blind_battle):
    battle = running_blind_battle
    add(redis_client, battle.left, p.DONE, text="Blue.", finish_reason="stop", metrics={})
    add(redis_client, battle.right, p.DONE, text="Gemma says red.", finish_reason="stop", metrics={})
    assert sweep_until_gone(sweeper, clock) == {sw.ADOPT: 2}
    battle.refresh_from_db()
    assert battle.finished and battle.self_identified


def test_the_sweeper_failing_a_side_flags_the_battle_on_the_partial_answer(sweeper, clock, redis_client,
                                                                           running_blind_battle):
    battle = running_blind_battle
    add(redis_client, battle.left, p.TOKEN, text="As SmolLM I", n=1)  # its worker died mid-answer
    add(redis_client, battle.right, p.DONE, text="Red.", finish_reason="stop", metrics={})
    assert sweep_until_gone(sweeper, clock) == {sw.ADOPT: 1, sw.FAIL: 1}
    battle.refresh_from_db()
    assert battle.left.status == S.FAILED and battle.left.text == "As SmolLM I"
    assert battle.self_identified


def test_the_sweeper_leaves_a_battle_whose_answers_name_nobody_unflagged(sweeper, clock, redis_client,
                                                                         running_blind_battle):
    battle = running_blind_battle
    for gen in (battle.left, battle.right):
        add(redis_client, gen, p.DONE, text="Blue.", finish_reason="stop", metrics={})
    sweep_until_gone(sweeper, clock)
    battle.refresh_from_db()
    assert battle.finished and not battle.self_identified
