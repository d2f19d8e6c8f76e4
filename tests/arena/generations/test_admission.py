"""The fair line for capacity (arena/generations/fairness.py, admission.py).

The order is a pure function checked on plain data; the passes run on the real database and
the real Redis (under this session's prefix), and an admitted run's task is read back from
the real Celery broker queue: a waiting one is never sent to Celery."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from arena import streams
from arena.generations import admission, runs
from arena.generations import fairness as fair
from arena.generations.lifecycle import NEVER_STARTED
from arena.generations.models import Generation
from arena.generations.services import GenerationRequest, start_generation
from arena.playground import fragments
from inference import protocol as p
from tests.arena.api_client import api
from tests.arena.broker import broker_messages
from tests.arena.factories import PARAMS, comparison

S = Generation.Status


# --- the order, pure ------------------------------------------------------------------
def w(key, user, since, cost=1):
    return fair.Waiting(key, user, cost, since)


def keys(runs):
    return [run.key for run in runs]


def test_the_line_takes_turns_between_users_not_first_come():
    waiting = [w("a1", 1, 1.0), w("a2", 1, 2.0), w("a3", 1, 3.0), w("b1", 2, 4.0), w("c1", 3, 5.0), w("b2", 2, 6.0)]
    assert keys(fair.line(waiting, {})) == ["a1", "b1", "c1", "a2", "b2", "a3"]


def test_the_user_served_longest_ago_goes_first():
    waiting = [w("a1", 1, 1.0), w("b1", 2, 2.0), w("c1", 3, 3.0)]
    # a was served a moment ago, b long ago, c never: c, then b, then a
    assert keys(fair.line(waiting, {1: 100.0, 2: 50.0})) == ["c1", "b1", "a1"]


@given(st.lists(st.tuples(st.integers(0, 4), st.floats(0, 100)), max_size=30),
       st.dictionaries(st.integers(0, 4), st.floats(0, 100)))
def test_the_line_is_every_waiter_once_each_user_in_order_turns_never_more_than_one_apart(arrivals, served):
    waiting = [w(f"r{i}", user, since) for i, (user, since) in enumerate(arrivals)]
    order = fair.line(waiting, served)
    assert sorted(keys(order)) == sorted(keys(waiting))
    for user in {run.user for run in waiting}:
        mine = [run for run in order if run.user == user]
        assert mine == sorted(mine, key=lambda r: (r.since, r.key))  # a user's own requests keep their order
    remaining = {user: sum(run.user == user for run in waiting) for user in {run.user for run in waiting}}
    taken = dict.fromkeys(remaining, 0)
    for run in order:  # while two users both still wait, neither gets two turns ahead of the other
        taken[run.user] += 1
        still = [u for u in remaining if taken[u] < remaining[u]]
        assert all(taken[run.user] <= taken[u] + 1 for u in still)


def test_runs_start_from_the_head_while_they_fit():
    order = [w("a1", 1, 1.0), w("b1", 2, 2.0), w("c1", 3, 3.0)]
    assert keys(fair.take(order, in_use=1, capacity=3)) == ["a1", "b1"]
    assert keys(fair.take(order, in_use=3, capacity=3)) == []


def test_a_battle_that_does_not_fit_holds_the_line_behind_it():
    order = [w("battle", 1, 1.0, cost=2), w("single", 2, 2.0)]
    assert fair.take(order, in_use=2, capacity=3) == []  # one slot free: the single must not overtake


def test_a_run_larger_than_the_capacity_starts_once_nothing_runs():
    order = [w("battle", 1, 1.0, cost=2), w("single", 2, 2.0)]
    assert keys(fair.take(order, in_use=0, capacity=1)) == ["battle"]
    assert fair.take(order, in_use=1, capacity=1) == []


def test_no_capacity_limit_starts_every_one():
    order = [w(f"r{i}", i % 3, float(i)) for i in range(40)]
    assert fair.take(order, in_use=500, capacity=0) == order


# --- passes on the real database and Redis -----------------------------------------------
@pytest.fixture
def capacity(settings):
    def set_to(n: int) -> None:
        settings.ARENA_MAX_CONCURRENT_GENERATIONS = n
    return set_to


@pytest.fixture
def users(db):
    make = get_user_model().objects.create_user
    return make("ann", password="x"), make("bob", password="x", is_staff=True), make("cat", password="x")


def queue(user, model, prompt="Name a colour.", *, ago: float = 0) -> Generation:
    """A playground generation sent through the service (its pass runs when the test calls one)."""
    gen = start_generation(user, GenerationRequest(model=model, prompt=prompt, params=PARAMS),
                           origin=Generation.Origin.WEB, kind=runs.PLAYGROUND)
    if ago:
        Generation.objects.filter(id=gen.id).update(created_at=timezone.now() - timedelta(seconds=ago))
    return gen


def states(*gens):
    for gen in gens:
        gen.refresh_from_db()
    return [(gen.status, gen.admitted_at is not None) for gen in gens]


def sent(redis_client):
    """The ids sent to Celery, oldest first (kombu pushes each at the head of the list)."""
    return [args[0] for _task, args in reversed(broker_messages(redis_client))]


def events(redis_client, gen, kind=None):
    found = [p.parse_event(f) for _id, f in redis_client.xrange(streams.keys().stream(str(gen.id)))]
    return [ev for ev in found if kind is None or ev["type"] == kind]


def finish(gen):
    assert gen.finish(S.DONE, text="Blue.")


def test_within_capacity_a_pass_starts_everything_and_sends_each_task(redis_client, capacity, users, smollm):
    capacity(4)
    ann, bob, _ = users
    gens = [queue(ann, smollm), queue(bob, smollm)]
    assert sent(redis_client) == []  # nothing goes to Celery before its pass
    assert admission.admit_waiting() == 2
    assert sorted(sent(redis_client)) == sorted(str(g.id) for g in gens)
    assert states(*gens) == [(S.QUEUED, True)] * 2  # admitted; the task moves them on


def test_past_capacity_the_rest_wait_in_turns_and_hear_their_place(redis_client, capacity, users, smollm):
    capacity(2)
    ann, bob, _ = users
    a1, a2, a3 = (queue(ann, smollm, ago=30 - i) for i in range(3))
    b1 = queue(bob, smollm, ago=10)  # bob (staff: exempt from per-user limits, not from the line) came last
    assert admission.admit_waiting() == 2
    assert sent(redis_client) == [str(a1.id), str(b1.id)]  # bob's first before ann's second
    assert [e["position"] for e in events(redis_client, a2, p.QUEUED)] == [1]
    assert [(e["position"], e["waiting"]) for e in events(redis_client, a3, p.QUEUED)] == [(2, 2)]
    assert admission.admit_waiting() == 0  # nothing freed, and an unchanged place is not said again
    assert len(events(redis_client, a3, p.QUEUED)) == 1
    finish(a1)
    assert admission.admit_waiting() == 1
    assert sent(redis_client)[-1] == str(a2.id)
    assert [e["position"] for e in events(redis_client, a3, p.QUEUED)] == [2, 1]


def test_the_api_says_a_waiting_generations_place_and_nothing_once_it_left_the_line(
        client, redis_client, capacity, owner, token, smollm):
    capacity(1)
    running, waiting = queue(owner, smollm, ago=5), queue(owner, smollm)
    admission.admit_waiting()
    read = lambda gen: api(client, "get", f"/api/v1/generations/{gen.id}", token).json()["queue"]  # noqa: E731
    assert read(waiting) == {"position": 1, "waiting": 1}
    assert read(running) is None
    finish(running)
    admission.admit_waiting()
    assert read(waiting) is None


def test_with_one_slot_users_alternate(redis_client, capacity, users, smollm):
    capacity(1)
    ann, bob, _ = users
    anns = [queue(ann, smollm, ago=60 - i) for i in range(3)]
    bobs = [queue(bob, smollm, ago=50 - i) for i in range(3)]
    order = []
    for _ in range(6):
        assert admission.admit_waiting() == 1
        started = Generation.objects.get(id=sent(redis_client)[-1])
        order.append(started.owner.username)
        finish(started)
    assert order == ["ann", "bob", "ann", "bob", "ann", "bob"]
    assert all(status == S.DONE for status, _ in states(*anns, *bobs))


def test_a_battle_waits_for_two_free_slots_and_nobody_overtakes_it(redis_client, capacity, users, smollm, catalogue):
    capacity(2)
    ann, bob, cat = users
    running = queue(cat, smollm, ago=60)
    assert admission.admit_waiting() == 1
    battle = comparison(ann, smollm, catalogue[1], texts=None)
    single = queue(bob, smollm)
    assert admission.admit_waiting() == 0
    assert states(battle.left, battle.right, single) == [(S.QUEUED, False)] * 3
    finish(running)
    assert admission.admit_waiting() == 1
    assert broker_messages(redis_client)[0] == ("arena.battles.tasks.run_battle", [str(battle.id)])
    assert states(battle.left, battle.right, single) == [(S.QUEUED, True), (S.QUEUED, True), (S.QUEUED, False)]


def test_stopped_abandoned_and_timed_out_waiters_are_ended(redis_client, capacity, users, smollm, settings):
    capacity(1)
    ann, bob, cat = users
    busy = queue(cat, smollm, ago=100)
    stopped, left, stale = queue(ann, smollm), queue(bob, smollm), queue(cat, smollm)
    assert admission.admit_waiting() == 1 and states(busy) == [(S.QUEUED, True)]
    keys = streams.keys()
    redis_client.set(keys.cancel(str(stopped.id)), "user")
    redis_client.hset(keys.viewers(str(left.id)), mapping={"count": 0, "left_at": repr(
        timezone.now().timestamp() - settings.ARENA_DISCONNECT_GRACE_S - 1)})
    Generation.objects.filter(id=stale.id).update(
        created_at=timezone.now() - timedelta(seconds=settings.ARENA_QUEUE_TIMEOUT_S + 1))
    admission.admit_waiting()
    assert states(stopped, left, stale) == [(S.CANCELLED, False), (S.CANCELLED, False), (S.FAILED, False)]
    assert events(redis_client, stopped)[-1]["type"] == p.CANCELLED
    stale.refresh_from_db()
    assert stale.failure_reason == NEVER_STARTED
    assert events(redis_client, stale)[-1]["reason"] == NEVER_STARTED
    assert sent(redis_client) == [str(busy.id)]


def test_a_waiting_viewer_that_is_still_there_keeps_its_place(redis_client, capacity, users, smollm):
    capacity(1)
    ann, bob, _ = users
    queue(ann, smollm, ago=10)
    watched = queue(bob, smollm)
    redis_client.hset(streams.keys().viewers(str(watched.id)), mapping={"count": 1})
    admission.admit_waiting()
    admission.admit_waiting()
    assert states(watched) == [(S.QUEUED, False)]


def test_forty_waiting_requests_of_four_users_are_each_told_one_place_in_the_fair_order(
        redis_client, capacity, users, smollm):
    """The fair line is the only line: each waiting request hears one place figure (its stream's
    QUEUED event, which the page and the API say), and the figures are the line's round robin."""
    capacity(1)
    make = get_user_model().objects.create_user
    ann, bob, cat = users
    dan, eve = make("dan", password="x"), make("eve", password="x")
    holder = queue(eve, smollm, ago=500)
    assert admission.admit_waiting() == 1  # eve's holds the one slot: the forty all wait
    four = [ann, bob, cat, dan]
    # Each user sends ten in a burst, one user after another: first come would serve ann's ten first.
    sent_by = {user.id: [queue(user, smollm, ago=400 - 10 * u - i) for i in range(10)]
               for u, user in enumerate(four)}
    admission.admit_waiting()

    def told(gen):
        said = events(redis_client, gen, p.QUEUED)
        figure = admission.place(gen)
        assert figure == {"position": said[-1]["position"], "waiting": said[-1]["waiting"]}  # one figure
        return said, figure

    for u, user in enumerate(four):  # round robin: everyone's first, then everyone's second...
        for turn, gen in enumerate(sent_by[user.id]):
            said, figure = told(gen)
            assert len(said) == 1 and figure == {"position": 4 * turn + u + 1, "waiting": 40}
            assert fragments.for_event(said[-1], 0.0).count(" in line of ") == 1

    finish(holder)
    assert admission.admit_waiting() == 1
    assert sent(redis_client)[-1] == str(sent_by[ann.id][0].id)  # the head of the line went next
    for u, user in enumerate(four):
        for turn, gen in enumerate(sent_by[user.id]):
            if (u, turn) != (0, 0):
                assert told(gen)[1] == {"position": 4 * turn + u, "waiting": 39}


def test_the_page_says_the_place_in_line():
    html = fragments.for_event({"type": p.QUEUED, "position": 2, "waiting": 5, "elapsed_s": 12.4, "t": 0.0}, 0.0)
    assert "Queued" in html and "2nd in line of 5 — 12 s" in html


def test_the_launcher_starts_a_celery_thread_for_every_run_the_line_may_admit():
    from arena.launcher import celery_threads

    assert celery_threads({}) == "32"  # 16 admitted runs and room for the short tasks beside them
    assert celery_threads({"ARENA_MAX_CONCURRENT_GENERATIONS": "40"}) == "56"
    assert celery_threads({"ARENA_MAX_CONCURRENT_GENERATIONS": "40", "ARENA_CELERY_CONCURRENCY": "8"}) == "8"
