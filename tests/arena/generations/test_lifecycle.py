"""A generation's life (arena/generations/lifecycle.py): the moves it may make, and its end written
once, by whoever comes first (its run, the line, the sweeper), each telling the viewers only when
it was the one that ended it. On the real database and the real Redis (this session's prefix)."""

import pytest

from arena import streams
from arena.generations import lifecycle
from arena.generations import status as status_line
from arena.generations.models import Generation
from inference import protocol as p

S = Generation.Status


def make(owner, model, status):
    return Generation.objects.create(owner=owner, model=model, prompt="Name a colour.", params={}, status=status)


def stream(redis_client, gen):
    return [p.parse_event(f) for _id, f in redis_client.xrange(streams.keys().stream(str(gen.id)))]


def stored(gen):
    gen.refresh_from_db()
    return gen.status


def test_a_generation_moves_queued_loading_running_once_each_and_never_skips(owner, smollm):
    gen = make(owner, smollm, S.QUEUED)
    assert not lifecycle.answering(gen)  # a queued one has no worker answering it yet
    assert lifecycle.begin(gen) and stored(gen) == S.LOADING
    assert not lifecycle.begin(gen)  # a second task for it finds it taken
    assert gen.started_at is None
    assert lifecycle.answering(gen) and stored(gen) == S.RUNNING
    started_at = gen.started_at
    assert started_at is not None and gen.created_at <= started_at
    assert not lifecycle.answering(gen) and not lifecycle.begin(gen)
    assert stored(gen) == S.RUNNING and gen.started_at == started_at  # written once


# Each way a generation ends, as its run, the line or the sweeper calls it.
ENDERS = {
    "fail": lambda gen, client: lifecycle.fail(gen, p.WORKER_DIED, "The model worker died.", client),
    "cancel": lambda gen, client: lifecycle.cancel(gen, client),
    "store_event": lambda gen, client: lifecycle.store_event(
        gen, {"type": p.DONE, "text": "Blue.", "finish_reason": "stop", "metrics": {}}, "Blue.", client),
}
ENDED_AS = {"fail": S.FAILED, "cancel": S.CANCELLED, "store_event": S.DONE}
TOLD = {"fail": [p.FAILED], "cancel": [p.CANCELLED], "store_event": []}  # the stream held the DONE already


@pytest.mark.parametrize("second", sorted(ENDERS))
@pytest.mark.parametrize("first", sorted(ENDERS))
@pytest.mark.parametrize("status", [S.QUEUED, S.LOADING, S.RUNNING])
def test_the_first_end_is_stored_and_told_and_a_later_one_changes_nothing(
        redis_client, owner, smollm, status, first, second):
    gen = make(owner, smollm, status)
    assert ENDERS[first](gen, redis_client)
    assert not ENDERS[second](Generation.objects.select_related("model").get(id=gen.id), redis_client)
    assert stored(gen) == ENDED_AS[first]
    assert [ev["type"] for ev in stream(redis_client, gen)] == TOLD[first]


def test_a_cancel_says_whether_the_page_was_closed(redis_client, owner, smollm):
    closed, stopped = make(owner, smollm, S.QUEUED), make(owner, smollm, S.QUEUED)
    redis_client.set(streams.keys().cancel(str(closed.id)), "abandoned")
    redis_client.set(streams.keys().cancel(str(stopped.id)), "user")
    for gen in (closed, stopped):
        assert lifecycle.cancel(gen, redis_client)
        gen.refresh_from_db()
    assert closed.failure_reason == status_line.PAGE_CLOSED and stopped.failure_reason == ""
