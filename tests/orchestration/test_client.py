"""What a lease holder hears while it waits (`orch.lease_progress`), read from real Redis as
the orchestrator and the workers write it: what it waits for, else its models' load progress. Never a
place in line: that is the fair line's alone (arena/generations/admission.py)."""

import json

import pytest
import redis

from inference.protocol import Keys, ModelSpec
from orchestration import client as orch

X, Y = ModelSpec(slug="x", source="unused"), ModelSpec(slug="y", source="unused")


@pytest.fixture
def bus(redis_url, redis_prefix):
    return redis.Redis.from_url(redis_url), Keys(redis_prefix)


def starting(bus, slug: str, worker_id: str, progress: str | None = None, at: float = 0.0) -> None:
    """The orchestrator's placement of a starting worker, and the worker's own progress line."""
    client, keys = bus
    client.hset(keys.variant(slug), mapping={"worker_id": worker_id, "state": "starting"})
    if progress:
        client.hset(keys.worker(worker_id), mapping={"progress": progress, "progress_at": repr(at)})


def test_a_waiting_lease_hears_what_it_waits_for_and_the_expected_wait_but_no_place(bus):
    client, keys = bus
    entry = {"since": 1.0, "reason": "waiting for memory", "expected_wait_s": 60}
    client.hset(keys.orchestrator_queue(), "generation:1", json.dumps(entry))
    starting(bus, "x", "x-1", "AWQ: quantised layer 3/30", at=5.0)  # another lease's load: not this one's news
    assert orch.lease_progress(client, keys, "generation:1", [X]) == (
        "waiting for memory (about 60 s)", 0.0)


def test_a_lease_whose_models_load_hears_the_slowest_moving_load(bus):
    client, keys = bus
    starting(bus, "x", "x-1", "AWQ: quantised layer 3/30", at=50.0)
    starting(bus, "y", "y-1", "AWQ: quantised layer 20/30", at=20.0)
    assert orch.lease_progress(client, keys, "battle:1", [X, Y]) == ("AWQ: quantised layer 20/30", 20.0)
    assert orch.lease_progress(client, keys, "generation:1", [X]) == ("AWQ: quantised layer 3/30", 50.0)


def test_a_load_that_says_nothing_yet_gives_nothing(bus):
    client, keys = bus
    starting(bus, "x", "x-1")
    assert orch.lease_progress(client, keys, "generation:1", [X]) == ("", 0.0)
    assert orch.lease_progress(client, keys, "generation:2", [Y]) == ("", 0.0)  # not even placed
