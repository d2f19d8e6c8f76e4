import pytest
import redis

from harness.ray_cluster import RayNodes, set_ray_env
from inference.protocol import Keys
from orchestration.backends.local import LocalBackend
from orchestration.policy import Config
from orchestration.service import Orchestrator

from .helpers import Recorder


@pytest.fixture
def make_orchestrator(redis_url, redis_prefix, tmp_path):
    """Orchestrators on the local backend (real worker processes) under this test's Redis prefix,
    ticked by the test; every one is shut down (its workers stopped) afterwards."""
    made = []

    def make(budget_mb=None, env=None, **config):
        backend = LocalBackend(redis_url, redis_prefix, tmp_path / "logs",
                               env={"ARENA_WORKER_THREADS": "1", **(env or {})}, budget_mb=budget_mb)
        recorder = Recorder()
        orchestrator = Orchestrator(backend, redis.Redis.from_url(redis_url), Keys(redis_prefix),
                                    Config(**config), recorder=recorder)
        made.append(orchestrator)
        return orchestrator, recorder

    yield make
    for orchestrator in made:
        orchestrator.shutdown()


@pytest.fixture
def ray_env(monkeypatch, tmp_path_factory):
    """Ray's environment for a test cluster and its driver: loopback, token authentication on
    (one token file for the session: a process's Ray keeps the token it first read)."""
    set_ray_env(monkeypatch, tmp_path_factory.getbasetemp())


@pytest.fixture
def ray_nodes(ray_env, tmp_path_factory, redis_url):
    """A Ray cluster with a head and no worker nodes yet; the nodes' own environment names Redis."""
    nodes = RayNodes({"REDIS_URL": redis_url, "ARENA_WORKER_LOG_DIR": str(tmp_path_factory.mktemp("ray-logs"))})
    yield nodes
    nodes.shutdown()
