"""The nodes backend on a Redis that machines can share safely: a private redis-server that asks
for a password (`requirepass`), one with an ACL user instead (redis://USER:PASSWORD@...), and
one that also speaks only TLS (rediss://) and asks every client for a certificate of its CA.
A real agent (`manage.py arena_agent`), real Celery, a real worker serving the tiny model,
every one given only REDIS_URL (and the TLS files) in its environment. Clients without the
password, or without TLS or a certificate, are refused; the password is on no process's
command line and in no log (inference/redis_connect.py)."""

import os
import secrets
import uuid
from pathlib import Path

import pytest
import redis
from celery import Celery

from harness.private_redis import PrivateRedis, make_tls_files
from inference import protocol, redis_connect
from inference.protocol import Keys, ModelSpec
from orchestration.backends.nodes import NodesBackend
from orchestration.policy import Config, Node
from orchestration.service import Orchestrator

from .agents import AgentProcess
from .helpers import acquired, generate, release, run_until

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


def test_the_nodes_backend_serves_a_model_through_it(secured, tiny_model_dir, tmp_path, monkeypatch):
    for name, value in secured.env().items():  # this process is the orchestrator's machine
        if name != "REDIS_URL":
            monkeypatch.setenv(name, value)
    prefix = secured.prefix
    data = tmp_path / "data"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "arena.settings", **secured.env(),
           "ARENA_REDIS_PREFIX": prefix, "ARENA_DATA_DIR": str(data), "PYTHONUNBUFFERED": "1",
           "ARENA_WORKER_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    agent = AgentProcess("a", 1500, env, tmp_path / "agent.log")
    app = Celery(f"test-{prefix}", broker=secured.url, set_as_current=False)
    app.conf.broker_transport_options = {"global_keyprefix": f"{prefix}:celery:"}
    app.conf.broker_use_ssl = redis_connect.celery_ssl(secured.url)
    client, keys = redis_connect.connect(secured.url), Keys(prefix)
    orchestrator = Orchestrator(NodesBackend(app, client, keys), client, keys, Config(keep_alive_s=60))
    try:
        try:
            run_until(orchestrator, lambda: orchestrator.nodes == (Node("a", 1500.0),), timeout=90)
        except AssertionError:
            raise AssertionError(agent.log_text()) from None
        spec = ModelSpec(slug="tiny", source=str(tiny_model_dir), memory_mb=500)
        (worker_id,) = acquired(orchestrator, "generation:1", spec, timeout=90).values()
        events = generate(orchestrator, worker_id)
        assert events[-1]["type"] == protocol.DONE and events[-1]["metrics"]["generated_tokens"] > 0

        worker_pid = orchestrator.backend.pid(worker_id)
        assert PASSWORD not in cmdline(agent.pid) and PASSWORD not in cmdline(worker_pid)  # `ps` shows these
        release(orchestrator, "generation:1")
    finally:
        orchestrator.shutdown()
        agent.stop()
        app.close()
    logs = [agent.log_path, *data.glob("logs/**/*.log")]
    assert len(logs) > 1 and not [log for log in logs if PASSWORD in log.read_text(errors="replace")]
    if secured.acl_prefix:  # kept to its prefix, and nothing the arena did was refused
        assert client.acl_log() == [], client.acl_log()
