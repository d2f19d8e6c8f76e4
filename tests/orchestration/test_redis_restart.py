"""A Redis restarted under the orchestrator and a real worker (a tiny random-weight model)
mid-stream. The Redis is this test's own (harness/private_redis.py): it comes back empty,
as this project's Redis does (nothing on disk)."""

import threading
import time
import uuid

import psutil
import pytest
import redis

from inference import protocol
from inference.protocol import Keys, ModelSpec
from inference.worker import redis_client
from orchestration import client as orch
from orchestration.backends.local import LocalBackend
from orchestration.policy import Config
from orchestration.service import Orchestrator
from tests.inference.workers import LONG, SHORT, push, read_events

pytestmark = pytest.mark.timeout(180)


def wait_for(predicate, timeout: float, message: str):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if value := predicate():
            return value
        time.sleep(0.1)
    raise AssertionError(message)


@pytest.fixture
def running(private_redis, tmp_path):
    """The orchestrator's real loop on a thread, as `manage.py orchestrator` runs it."""
    keys = Keys(f"restart-{uuid.uuid4().hex[:8]}")
    client = redis.Redis.from_url(private_redis.url)
    backend = LocalBackend(private_redis.url, keys.prefix, tmp_path / "logs", env={"ARENA_WORKER_THREADS": "1"})
    orchestrator = Orchestrator(backend, client, keys, Config(heartbeat_grace_s=4.0))
    stop = threading.Event()
    thread = threading.Thread(target=orchestrator.run, args=(stop.is_set, 0.1), daemon=True)
    thread.start()
    yield orchestrator, redis.Redis.from_url(private_redis.url, decode_responses=True), keys
    stop.set()
    thread.join(timeout=30)


def worker_processes(prefix: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if "inference.worker" in cmdline and prefix in cmdline and proc.status() != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def test_a_redis_restart_mid_stream_is_ridden_out_by_the_same_worker(running, private_redis, tiny_model_dir):
    orchestrator, client, keys = running
    spec = ModelSpec(slug="tiny", source=str(tiny_model_dir))
    (worker_id,) = orch.acquire(orchestrator.redis, keys, "generation:1", [spec], timeout_s=90).values()
    orch.release_lease(orchestrator.redis, keys, "generation:1")
    pid = int(client.hget(keys.worker(worker_id), "pid"))
    job = push(client, keys, worker_id, params=LONG)
    read_events(client, keys, job.generation_id, until={protocol.TOKEN})

    private_redis.restart(down_s=3.0)  # longer than a heartbeat's TTL, shorter than the clients' retries

    # The worker wrote on into the fresh Redis: the answer ends, in full, in a new stream.
    events = read_events(client, keys, job.generation_id, timeout=60)
    assert events[-1]["type"] == protocol.DONE and len(events[-1]["text"]) > 0, events[-1]
    assert events[-1]["metrics"]["generated_tokens"] == LONG.max_new_tokens or events[-1]["finish_reason"] == "stop"
    # The same worker serves on: its status is back, its placement published again, and no second one started.
    wait_for(lambda: orch.placement(orchestrator.redis, keys, "tiny").get("worker_id") == worker_id, 10,
             "placement not republished")
    status = client.hgetall(keys.worker(worker_id))
    assert (status["state"], int(status["pid"]), status["node"]) == (protocol.W_READY, pid, "local")
    assert list(orchestrator.workers) == [worker_id]
    assert [p.pid for p in worker_processes(keys.prefix)] == [pid]
    # ...and the next request is served by it.
    assert orch.acquire(orchestrator.redis, keys, "generation:2", [spec], timeout_s=30) == {"tiny": worker_id}
    orch.release_lease(orchestrator.redis, keys, "generation:2")
    again = push(client, keys, worker_id, params=SHORT)
    assert read_events(client, keys, again.generation_id)[-1]["type"] == protocol.DONE


def test_a_lease_waiting_across_a_restart_is_still_granted(running, private_redis, tiny_model_dir):
    """A battle waiting for its models across a restart: its client rides the restart out,
    its renewals reach the orchestrator again and the grant reaches it (no stall until the
    timeout, no second worker)."""
    orchestrator, _client, keys = running
    spec = ModelSpec(slug="tiny", source=str(tiny_model_dir))
    result = {}

    def acquire():
        try:
            # A client that rides restarts out, as the application's (arena.streams) do.
            waiter_client = redis_client(private_redis.url, decode_responses=False)
            result["workers"] = orch.acquire(waiter_client, keys, "battle:1", [spec], timeout_s=60)
        except Exception as exc:  # reported below
            result["error"] = exc

    waiter = threading.Thread(target=acquire)
    waiter.start()
    wait_for(lambda: orchestrator.leases.get("battle:1"), 10, "lease never arrived")
    private_redis.restart(down_s=0.5)
    waiter.join(timeout=90)
    assert "error" not in result, result
    (worker_id,) = result["workers"].values()
    assert list(orchestrator.workers) == [worker_id]
    assert len(worker_processes(keys.prefix)) == 1
    orch.release_lease(orchestrator.redis, keys, "battle:1")
