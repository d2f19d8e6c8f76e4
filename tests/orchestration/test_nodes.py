"""The nodes backend with real agents: two `manage.py arena_agent` processes with different
budgets on this machine, real Celery over real Redis, real worker processes serving the
tiny random-weight model, and an orchestrator ticked by the test."""

import json
import os
import signal
import time

import pytest
import redis
from celery import Celery

from inference import protocol
from inference.protocol import Keys, ModelSpec
from orchestration import client as orch
from orchestration.backends.local import _is_worker
from orchestration.backends.nodes import NodesBackend
from orchestration.policy import Config, Node
from orchestration.service import Orchestrator

from .agents import AgentProcess
from .helpers import HELD, Recorder, acquired, generate, lease, placement, release, run_until

pytestmark = pytest.mark.timeout(180)


class NodeRecorder(Recorder):
    def __init__(self):
        super().__init__()
        self.nodes = {}

    def transition(self, worker_id, slug, state, at, **fields):
        super().transition(worker_id, slug, state, at, **fields)
        if "node" in fields:
            self.nodes[worker_id] = fields["node"]


@pytest.fixture
def start_agent(redis_url, redis_prefix, tmp_path):
    """Agents under this test's Redis prefix; every one is stopped (then killed) afterwards."""
    started: list[AgentProcess] = []
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "arena.settings", "REDIS_URL": redis_url,
           "ARENA_REDIS_PREFIX": redis_prefix, "ARENA_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1",
           "ARENA_WORKER_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

    def start(node_id: str, budget_mb: float) -> AgentProcess:
        agent = AgentProcess(node_id, budget_mb, env, tmp_path / f"agent-{node_id}.log")
        started.append(agent)
        return agent

    yield start
    for agent in started:
        agent.stop()


@pytest.fixture
def celery_app(redis_url, redis_prefix):
    """The orchestrator's side of Celery, on the same broker keys as the agents."""
    app = Celery(f"test-{redis_prefix}", broker=redis_url, set_as_current=False)
    app.conf.broker_transport_options = {"global_keyprefix": f"{redis_prefix}:celery:"}
    app.conf.broker_connection_retry_on_startup = True
    yield app
    app.close()


@pytest.fixture
def cluster(start_agent, celery_app, redis_url, redis_prefix):
    """Agents a (1500 MB) and b (2500 MB), and an orchestrator on the nodes backend once both report."""
    made = []

    def make(**config):
        agents = {"a": start_agent("a", 1500), "b": start_agent("b", 2500)}
        backend = NodesBackend(celery_app, redis.Redis.from_url(redis_url), Keys(redis_prefix))
        recorder = NodeRecorder()
        orchestrator = Orchestrator(backend, redis.Redis.from_url(redis_url), Keys(redis_prefix), Config(**config),
                                    recorder=recorder)
        made.append(orchestrator)
        try:
            run_until(orchestrator, lambda: len(orchestrator.nodes) == 2, timeout=90)
        except AssertionError:
            raise AssertionError("\n".join(a.log_text() for a in agents.values())) from None
        return orchestrator, recorder, agents

    yield make
    for orchestrator in made:
        orchestrator.shutdown()  # before the agents stop (fixtures end in reverse order)


def status(orchestrator) -> dict:
    return json.loads(orchestrator.redis.get(orchestrator.keys.orchestrator_status()))


def node_report(orchestrator, node_id) -> dict | None:
    raw = orchestrator.redis.get(orchestrator.keys.node(node_id))
    return json.loads(raw) if raw else None


def parent_pid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def wait_until(predicate, timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(message)


def test_a_model_goes_to_the_node_with_room_serves_there_and_stops_there(cluster, tiny_model_dir):
    orchestrator, recorder, agents = cluster(keep_alive_s=2.0)
    # Both nodes report, with their budgets; the status page shows both.
    assert orchestrator.nodes == (Node("a", 1500.0), Node("b", 2500.0))
    assert [(n["node"], n["budget_mb"]) for n in status(orchestrator)["nodes"]] == [("a", 1500.0), ("b", 2500.0)]
    assert node_report(orchestrator, "a")["pid"] == agents["a"].pid

    big = ModelSpec(slug="big", source=str(tiny_model_dir), memory_mb=2000)  # fits b only

    (worker_id,) = acquired(orchestrator, "generation:1", big, timeout=90).values()
    pid = orchestrator.backend.pid(worker_id)
    assert parent_pid(pid) == agents["b"].pid  # started by agent b, in its process
    (shown,) = status(orchestrator)["workers"]
    assert shown["node"] == "b" and shown["state"] == "ready"
    assert [n["reserved_mb"] for n in status(orchestrator)["nodes"]] == [0, shown["reserved_mb"]]
    assert recorder.nodes[worker_id] == "b"  # recorded with the transition

    events = generate(orchestrator, worker_id)
    assert events[-1]["type"] == protocol.DONE and events[-1]["metrics"]["generated_tokens"] > 0
    release(orchestrator, "generation:1")

    # Released and idle past the keep-alive: the orchestrator stops it through agent b.
    run_until(orchestrator, lambda: not orchestrator.workers, timeout=30)
    assert [state for _slug, state, _ in recorder.transitions] == ["starting", "ready", "stopping", "stopped"]
    assert node_report(orchestrator, "b")["workers"][worker_id]["exit_code"] == 0
    assert not _is_worker(pid)


def test_an_agent_that_disappears_loses_its_workers_which_are_served_again_elsewhere(cluster, tiny_model_dir):
    orchestrator, recorder, agents = cluster(**HELD)
    spec = ModelSpec(slug="tiny", source=str(tiny_model_dir), memory_mb=1000)  # best fit: a
    lease(orchestrator, "generation:1", spec)
    run_until(orchestrator, lambda: placement(orchestrator, "tiny").get("state") == "ready", timeout=90)
    (lost,) = orchestrator.workers
    assert orchestrator.workers[lost]["node"] == "a"
    lost_pid = orchestrator.backend.pid(lost)

    os.kill(agents["a"].pid, signal.SIGKILL)  # the machine's agent vanishes, as in a crash
    wait_until(lambda: not _is_worker(lost_pid), 15, "the worker outlived its agent")  # PDEATHSIG
    run_until(orchestrator, lambda: placement(orchestrator, "tiny").get("last_error"), timeout=30)
    reason = "Node a was lost (its agent stopped reporting); the model worker there is gone."
    assert placement(orchestrator, "tiny")["last_error"] == reason
    assert ("tiny", "failed", reason) in recorder.transitions

    # Served again on b, the node with room; a is gone from the nodes.
    run_until(orchestrator, lambda: placement(orchestrator, "tiny").get("state") == "ready", timeout=90)
    (replacement,) = orchestrator.workers
    assert replacement != lost and orchestrator.workers[replacement]["node"] == "b"
    assert orchestrator.nodes == (Node("b", 2500.0),)
    assert [n["node"] for n in status(orchestrator)["nodes"]] == ["b"]
    assert node_report(orchestrator, "a") is None
    replacement_pid = orchestrator.backend.pid(replacement)
    assert parent_pid(replacement_pid) == agents["b"].pid

    # A clean stop (SIGTERM): the agent stops its workers, removes its report and exits 0.
    agents["b"].proc.terminate()
    assert agents["b"].proc.wait(timeout=30) == 0
    assert not _is_worker(replacement_pid)
    assert node_report(orchestrator, "b") is None
    run_until(orchestrator, lambda: not orchestrator.workers, timeout=10)
    assert recorder.transitions[-1] == ("tiny", "failed", reason.replace("Node a", "Node b"))
    assert orchestrator.nodes == ()


def test_a_restarted_orchestrator_stops_the_workers_an_earlier_one_left_on_the_nodes(
        cluster, tiny_model_dir, celery_app, redis_url, redis_prefix):
    previous, _, _agents = cluster(**HELD)
    spec = ModelSpec(slug="tiny", source=str(tiny_model_dir), memory_mb=1000)
    lease(previous, "generation:1", spec)
    run_until(previous, lambda: placement(previous, "tiny").get("state") == "ready", timeout=90)
    (orphan,) = previous.workers
    orphan_pid = previous.backend.pid(orphan)

    # Same Redis prefix, a fresh backend: what a restart sees.
    restarted = Orchestrator(NodesBackend(celery_app, redis.Redis.from_url(redis_url), Keys(redis_prefix)),
                             redis.Redis.from_url(redis_url), Keys(redis_prefix), Config(**HELD))
    try:
        restarted.recover()
        assert orch.worker_failure(restarted.redis, restarted.keys, orphan) == "stopped: the orchestrator restarted"
        lease(restarted, "generation:2", spec)
        run_until(restarted, lambda: not _is_worker(orphan_pid)
                  and placement(restarted, "tiny").get("state") == "ready", timeout=90)
        (serving,) = restarted.workers
        assert serving != orphan
        assert node_report(restarted, "a")["workers"][orphan]["exit_code"] == 0  # stopped by its agent
    finally:
        restarted.shutdown()
