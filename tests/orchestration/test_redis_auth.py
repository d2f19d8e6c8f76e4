"""Workers on Ray with a Redis that machines can share safely: a private redis-server that asks
for a password (`requirepass`), one with an ACL user instead (redis://USER:PASSWORD@...), and
one that also speaks only TLS (rediss://) and asks every client for a certificate of its CA.
A real Ray cluster (token authentication on) whose node has REDIS_URL (and the TLS files) in
its own environment, and a real worker in a Ray actor serving the tiny model. Clients without
the password, or without TLS or a certificate, are refused; the password is on no process's
command line, in nothing Ray keeps of the actor (its dashboard shows that), and in no log
(inference/redis_connect.py)."""

import json
import secrets
import uuid
from pathlib import Path

import pytest
import redis

from harness.private_redis import PrivateRedis, make_tls_files
from harness.ray_cluster import RayNodes
from inference import protocol, redis_connect
from inference.protocol import Keys, ModelSpec
from orchestration.backends import ray_cluster
from orchestration.policy import Config
from orchestration.service import Orchestrator

from .helpers import acquired, generate, release

pytestmark = pytest.mark.timeout(180)
PASSWORD = f"arena-pw-{secrets.token_hex(8)}"


@pytest.fixture(params=["password", "acl-user", "tls"])
def secured(request, tmp_path):
    """A private redis-server with a password; the ACL user may touch only its prefix's keys and channels."""
    tls = make_tls_files(tmp_path) if request.param == "tls" else None
    prefix = f"arena-test-{uuid.uuid4().hex[:12]}"
    acl = request.param == "acl-user"
    server = PrivateRedis(password=PASSWORD, tls=tls, username="arena" if acl else None,
                          acl_prefix=prefix if acl else None)
    server.prefix = prefix
    server.start()
    yield server
    server.stop()


def without_password(url: str) -> str:
    return url.replace(f"arena:{PASSWORD}@", "").replace(f":{PASSWORD}@", "")


def test_clients_without_the_password_are_refused(secured):
    assert secured.client().ping()
    tls = redis_connect.tls_options(secured.url, secured.env())
    with pytest.raises(redis.AuthenticationError):  # NOAUTH
        redis.Redis.from_url(without_password(secured.url), **tls).ping()
    with pytest.raises(redis.AuthenticationError):  # WRONGPASS
        redis.Redis.from_url(secured.url.replace(PASSWORD, "guess"), **tls).ping()
    if secured.acl_prefix:  # the arena's ACL user reaches no key outside its prefix
        with pytest.raises(redis.exceptions.NoPermissionError):
            secured.client().set("another-app:key", "1")
    if secured.tls:
        with pytest.raises(redis.ConnectionError):  # plain TCP on the TLS port
            redis.Redis.from_url(secured.url.replace("rediss://", "redis://"), socket_timeout=5).ping()
        with pytest.raises(redis.ConnectionError):  # TLS without this CA's client certificate
            redis.Redis.from_url(secured.url, ssl_ca_certs=str(secured.tls.ca), socket_timeout=5).ping()


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_workers_on_ray_serve_a_model_through_it(secured, tiny_model_dir, tmp_path, monkeypatch, ray_env):
    for name, value in secured.env().items():  # the TLS files: this process is the orchestrator's machine
        if name != "REDIS_URL":
            monkeypatch.setenv(name, value)
    logs = tmp_path / "worker-logs"
    nodes = RayNodes({**secured.env(), "ARENA_WORKER_LOG_DIR": str(logs)})  # the node's own environment
    client, keys = redis_connect.connect(secured.url), Keys(secured.prefix)
    try:
        nodes.add("n", memory_mb=1500)
        ray_cluster.connect(nodes.address)
        orchestrator = Orchestrator(ray_cluster.RayBackend(secured.prefix), client, keys, Config(keep_alive_s=60))
        try:
            spec = ModelSpec(slug="tiny", source=str(tiny_model_dir), memory_mb=500, cpus=1)
            (worker_id,) = acquired(orchestrator, "generation:1", spec, timeout=120).values()
            events = generate(orchestrator, worker_id)
            assert events[-1]["type"] == protocol.DONE and events[-1]["metrics"]["generated_tokens"] > 0
            worker_pid = orchestrator.backend.pid(worker_id)
            actor_pid = Path(f"/proc/{worker_pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
            for pid in (worker_pid, int(actor_pid), *ray_pids()):  # `ps` shows these
                assert PASSWORD not in cmdline(pid), pid
            import ray

            assert PASSWORD not in json.dumps(ray._private.state.actors(), default=str)  # what the dashboard shows
            release(orchestrator, "generation:1")
        finally:
            orchestrator.shutdown()
        session = Path(nodes.cluster.head_node.get_session_dir_path())
    finally:
        nodes.shutdown()
    written = [*logs.glob("*.log"), *(p for p in session.glob("logs/**/*") if p.is_file())]
    assert len(written) > 1 and not [p for p in written if PASSWORD in p.read_text(errors="replace")]
    if secured.acl_prefix:  # kept to its prefix, and nothing the arena did was refused
        assert client.acl_log() == [], client.acl_log()


def ray_pids() -> list[int]:
    """The Ray cluster's own processes on this machine (its GCS and raylets)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and Path(entry, "comm").read_text().strip() in ("gcs_server", "raylet"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found
