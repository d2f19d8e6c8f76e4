"""A web answer whose every viewer left is cancelled (arena/generations/run.py `check_abandoned`);
stored, it says the page was closed, not "Stopped by the user", which only the Stop button earns.
The follower runs against real Redis and the database, the test writing what the worker would."""

import time

import pytest

from arena import streams
from arena.generations import services, status
from arena.generations.models import Generation
from arena.generations.run import Follower
from arena.generations.templatetags.generation_tags import status_text
from inference import protocol as p

pytestmark = pytest.mark.django_db(transaction=True)


def running(owner, model) -> Follower:
    gen = Generation.objects.create(owner=owner, model=model, prompt="Name a colour.", params={"max_new_tokens": 8})
    follower = Follower(Generation.objects.select_related("model").get(id=gen.id))
    follower.worker_id, follower.started = "w-page-closed-7d1e", True
    follower.redis.xadd(follower.stream, p.event(p.STARTED, prompt_tokens=3, queue_s=0.0))
    follower.text = ["Violet"]
    return follower


def cancelled_by_the_worker(follower: Follower) -> Generation:
    """The worker saw the cancel key and ended the job: the follower stores what it says."""
    assert follower.redis.exists(streams.keys().cancel(str(follower.gen.id)))
    follower.store_outcome({"type": p.CANCELLED, "text": "Violet", "metrics": {"generated_tokens": 1}})
    return Generation.objects.get(id=follower.gen.id)


def test_a_page_closed_before_the_answer_finished_is_told_apart_from_stop(owner, smollm, settings):
    settings.ARENA_DISCONNECT_GRACE_S = 1
    follower = running(owner, smollm)
    viewers = streams.keys().viewers(str(follower.gen.id))
    follower.redis.hset(viewers, mapping={"count": 0, "left_at": repr(time.time() - 5)})  # left 5 s ago

    follower.check()
    gen = cancelled_by_the_worker(follower)

    assert gen.status == Generation.Status.CANCELLED and gen.failure_reason == status.PAGE_CLOSED
    line = status.of(gen)
    assert status.PAGE_CLOSED in line and status.STOPPED_BY_USER not in line
    assert status_text(gen) == status.PAGE_CLOSED


def test_stop_still_reads_stopped_by_the_user(owner, smollm):
    follower = running(owner, smollm)
    services.cancel([follower.gen.id], "user")
    gen = cancelled_by_the_worker(follower)
    assert gen.status == Generation.Status.CANCELLED and gen.failure_reason == ""
    assert status.STOPPED_BY_USER in status.of(gen) and status_text(gen) == status.STOPPED_BY_USER
