"""The orchestrator on the Ray backend, on a real multi-node Ray cluster (tests/orchestration/
ray_nodes.py: raylets on 127.0.0.1, token authentication on), with real worker processes serving
a tiny random-weight model and streaming through the real Redis."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
import redis

from inference import protocol
from inference.protocol import Keys, ModelSpec
from orchestration.policy import Config
from orchestration.service import Orchestrator

from .helpers import HELD, Acquiring, Recorder, acquired, generate, placement, release, run_until

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


@pytest.fixture
def make_ray_orchestrator(ray_nodes, redis_url, redis_prefix):
    made = []

    def make(**config):
        from orchestration.backends import ray_cluster

        ray_cluster.connect(ray_nodes.address)
        orchestrator = Orchestrator(ray_cluster.RayBackend(redis_prefix), redis.Redis.from_url(redis_url),
                                    Keys(redis_prefix), Config(**{**HELD, **config}), recorder=Recorder())
        made.append(orchestrator)
        return orchestrator

    yield make
    for orchestrator in made:
        orchestrator.shutdown()


def tiny(slug, model_dir, memory_mb=1000.0, **fields) -> ModelSpec:
    return ModelSpec(slug=slug, source=str(model_dir), memory_mb=memory_mb, cpus=1, **fields)


def node_of(orchestrator, worker_id) -> str:
    return orchestrator.workers[worker_id]["node"]


def test_each_variant_goes_to_the_only_node_whose_memory_or_gpus_fit_and_streams(
        ray_nodes, make_ray_orchestrator, tiny_model_dir):
    small = ray_nodes.add("small", memory_mb=800)
    large = ray_nodes.add("large", memory_mb=3000)
    gpu = ray_nodes.add("gpu", memory_mb=1200, gpus=1)
    orchestrator = make_ray_orchestrator()
    big = tiny("big", tiny_model_dir, memory_mb=2000)
    on_gpu = tiny("on-gpu", tiny_model_dir, memory_mb=500, gpus=1)
    workers = acquired(orchestrator, "battle:1", big, on_gpu, timeout=120)
    assert node_of(orchestrator, workers["big"]) == large
    assert node_of(orchestrator, workers["on-gpu"]) == gpu
    assert generate(orchestrator, workers["big"])[-1]["type"] == protocol.DONE  # tokens through Redis
    status = json.loads(orchestrator.redis.get(orchestrator.keys.orchestrator_status()))
    shown = {node["name"]: node for node in status["nodes"]}
    assert {"small", "large", "gpu"} <= set(shown) and small in {n["node"] for n in status["nodes"]}
    assert shown["large"]["resources"] == {"cpus": 2.0, "gpus": 0.0, "memory_mb": 3000.0}
    assert shown["large"]["in_use"]["memory_mb"] == 2000.0 and shown["large"]["reserved_mb"] == 2000.0
    assert shown["gpu"]["in_use"]["gpus"] == 1.0 and shown["small"]["in_use"]["memory_mb"] == 0.0
    assert {w["node_name"] for w in status["workers"]} == {"large", "gpu"}


def test_two_models_that_fit_no_single_node_together_go_to_two_nodes(
        ray_nodes, make_ray_orchestrator, tiny_model_dir):
    first, second = ray_nodes.add("a", memory_mb=1500), ray_nodes.add("b", memory_mb=1500)
    orchestrator = make_ray_orchestrator()
    workers = acquired(orchestrator, "battle:1", tiny("x", tiny_model_dir), tiny("y", tiny_model_dir), timeout=120)
    assert {node_of(orchestrator, w) for w in workers.values()} == {first, second}


def test_a_node_lost_mid_stream_fails_its_worker_with_a_readable_reason_and_the_model_is_served_elsewhere(
        ray_nodes, make_ray_orchestrator, tiny_model_dir):
    ray_nodes.add("doomed", memory_mb=1500)
    orchestrator = make_ray_orchestrator()
    spec = tiny("m", tiny_model_dir)
    (worker_id,) = acquired(orchestrator, "generation:1", spec, timeout=120).values()
    # The spare node first: starting a node takes seconds, which a fast decoder once used up to
    # finish the whole answer before the doomed node went (the answer must be cut mid-stream).
    spare = ray_nodes.add("spare", memory_mb=1500)
    job = protocol.Job(generation_id="g-lost", messages=[{"role": "user", "content": "Go on."}],
                       params=protocol.SamplingParams(temperature=0.0, max_new_tokens=2048))
    orchestrator.redis.rpush(orchestrator.keys.worker_jobs(worker_id), job.to_json())
    run_until(orchestrator, lambda: orchestrator.redis.xlen(orchestrator.keys.stream("g-lost")) > 3)
    ray_nodes.remove("doomed")
    run_until(orchestrator, lambda: worker_id not in orchestrator.workers, timeout=60)
    events = [protocol.parse_event(fields) for _, fields in
              orchestrator.redis.xrange(orchestrator.keys.stream("g-lost"))]
    assert events and protocol.DONE not in [e["type"] for e in events], events[-1]  # cut mid-stream
    reason = placement(orchestrator, "m")["last_error"]
    assert reason.startswith("The machine serving this model was lost"), reason
    worker = orchestrator.redis.hgetall(orchestrator.keys.worker(worker_id))
    assert worker[b"state"] == protocol.W_FAILED.encode() and worker[b"error"].decode() == reason
    release(orchestrator, "generation:1")
    (again,) = acquired(orchestrator, "generation:2", spec, timeout=120).values()
    assert node_of(orchestrator, again) == spare
    assert generate(orchestrator, again)[-1]["type"] == protocol.DONE


def test_a_worker_killed_by_a_signal_is_restarted(ray_nodes, make_ray_orchestrator, tiny_model_dir):
    ray_nodes.add("n", memory_mb=1500)
    orchestrator = make_ray_orchestrator(retry_base_s=0.5)
    spec = tiny("m", tiny_model_dir)
    (worker_id,) = acquired(orchestrator, "generation:1", spec, timeout=120).values()
    os.kill(orchestrator.backend.pid(worker_id), signal.SIGKILL)
    run_until(orchestrator, lambda: worker_id not in orchestrator.workers, timeout=60)
    assert "killed by signal 9" in placement(orchestrator, "m")["last_error"]
    release(orchestrator, "generation:1")
    (again,) = acquired(orchestrator, "generation:2", spec, timeout=120).values()
    assert again != worker_id and generate(orchestrator, again)[-1]["type"] == protocol.DONE


def test_a_model_no_node_can_hold_waits_with_its_reason_and_asks_ray_for_a_node(
        ray_nodes, make_ray_orchestrator, tiny_model_dir):
    from ray.experimental.internal_kv import _internal_kv_get

    ray_nodes.add("small", memory_mb=800)
    orchestrator = make_ray_orchestrator()
    spec = tiny("big", tiny_model_dir, memory_mb=2000, gpus=1)
    acquiring = Acquiring(orchestrator, "generation:1", [spec], timeout_s=150).started()

    def asked() -> list:
        raw = _internal_kv_get(b"autoscaler_resource_request")
        return json.loads(raw) if raw else []

    run_until(orchestrator, lambda: bool(asked()))
    assert asked() == [{"CPU": 1.0, "memory": 2000.0 * 2**20, "GPU": 1.0}]
    queue = orchestrator.redis.hgetall(orchestrator.keys.orchestrator_queue())
    assert json.loads(queue[b"generation:1"])["reason"] == (
        "The model big needs about 2000 MB and 1 GPU on one machine; the largest node has 800 MB.")
    ray_nodes.add("grown", memory_mb=3000, gpus=1)  # what an autoscaler would add
    run_until(orchestrator, lambda: acquiring.over, timeout=120)
    assert acquiring.workers and not acquiring.error
    run_until(orchestrator, lambda: asked() == [])  # served: nothing more is asked for


PROBE = """
from ray._raylet import GcsClient
try:
    GcsClient(address=ADDRESS, cluster_id=None).internal_kv_keys(b"", None, timeout=5)
    print("LET IN")
except Exception as exc:
    print("REFUSED", type(exc).__name__)
"""


def test_the_cluster_refuses_a_client_without_its_token(ray_nodes):
    probe = PROBE.replace("ADDRESS", repr(ray_nodes.address))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    for extra in ({}, {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 64}):
        done = subprocess.run([sys.executable, "-c", probe], env={**env, **extra}, capture_output=True, text=True,
                              timeout=60)
        assert "REFUSED AuthenticationError" in done.stdout, done.stdout + done.stderr[-2000:]
    done = subprocess.run([sys.executable, "-c", probe], env=dict(os.environ), capture_output=True, text=True,
                          timeout=60)
    assert "LET IN" in done.stdout, done.stdout + done.stderr[-2000:]  # the same probe, with the token file


def test_every_ray_process_listens_on_the_loopback_only(ray_nodes):
    ray_nodes.add("n", memory_mb=500)
    listening = [c for c in psutil.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN and c.pid]
    ours = [c for c in listening if _is_ray(c.pid)]
    assert ours and all(c.laddr.ip in ("127.0.0.1", "::ffff:127.0.0.1") for c in ours), ours


def _is_ray(pid: int) -> bool:
    try:
        process = psutil.Process(pid)
        return process.name() in ("gcs_server", "raylet") or "ray" in " ".join(process.cmdline()[:2])
    except psutil.Error:
        return False


def test_a_crashed_actor_fails_its_worker_with_ray_s_reason(ray_nodes, make_ray_orchestrator, tiny_model_dir):
    ray_nodes.add("n", memory_mb=1500)
    orchestrator = make_ray_orchestrator()
    (worker_id,) = acquired(orchestrator, "generation:1", tiny("m", tiny_model_dir), timeout=120).values()
    worker_pid = orchestrator.backend.pid(worker_id)
    actor_pid = psutil.Process(worker_pid).ppid()
    os.kill(actor_pid, signal.SIGKILL)  # the actor's process, not the worker: Ray reports it dead
    run_until(orchestrator, lambda: worker_id not in orchestrator.workers, timeout=60)
    assert placement(orchestrator, "m")["last_error"].startswith("The model worker's Ray actor died")
    assert _gone(worker_pid, within_s=30)  # the worker went with its actor (PDEATHSIG)


def test_an_orchestrator_that_dies_takes_its_workers_with_it_and_the_next_one_starts_clean(
        ray_nodes, make_ray_orchestrator, tiny_model_dir):
    """Ray ends a driver's actors with it: a restarted orchestrator never finds two workers for one
    variant (it marks the old one's status stopped, as on one machine)."""
    import ray

    ray_nodes.add("n", memory_mb=1500)
    first = make_ray_orchestrator()
    (worker_id,) = acquired(first, "generation:1", tiny("m", tiny_model_dir), timeout=120).values()
    worker_pid = first.backend.pid(worker_id)
    ray.shutdown()  # the orchestrator's process gone, as far as Ray can tell: its driver disconnects
    first.backend._hosts.clear()  # (this process lives on: nothing of the dead one's may be stopped again)
    assert _gone(worker_pid, within_s=60), "the worker outlived its orchestrator"
    second = make_ray_orchestrator()
    second.recover()
    status = second.redis.hgetall(second.keys.worker(worker_id))
    assert status[b"state"] == protocol.W_STOPPED.encode()
    (again,) = acquired(second, "generation:2", tiny("m", tiny_model_dir), timeout=120).values()
    assert again != worker_id and generate(second, again)[-1]["type"] == protocol.DONE


def _gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.2)
    return False
