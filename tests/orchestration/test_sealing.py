"""A catalogue entry's stored key reaches its worker only through the worker's environment: the
spec carries it sealed (Redis, the command line), the local backend opens it when it spawns the
worker. A real worker process sends it to a real server (tests/inference/faulty_endpoint.py)."""

import uuid
from pathlib import Path

import pytest
import redis
from cryptography.fernet import Fernet

from inference import protocol
from inference.config import STORED_KEY_ENV
from inference.protocol import Keys, ModelSpec
from orchestration import sealing
from orchestration.backends.local import LocalBackend
from tests.inference.faulty_endpoint import FaultyServer
from tests.inference.workers import push, read_events, wait_until

KEY = "sk-stored-" + uuid.uuid4().hex


@pytest.fixture
def secrets_key():
    return Fernet.generate_key().decode()


def value_of(client, name: str):
    """A key's value read by its type (DUMP may compress what it holds)."""
    return {"string": client.get, "hash": client.hgetall, "list": lambda n: client.lrange(n, 0, -1),
            "set": client.smembers, "zset": lambda n: client.zrange(n, 0, -1), "stream": client.xrange,
            "none": lambda n: None}[client.type(name)](name)


def spec(base_url: str, sealed: str) -> ModelSpec:
    return ModelSpec(slug="hosted", engine="openai", base_url=base_url, remote_model="ok", api_key_sealed=sealed)


def test_the_worker_gets_its_key_in_its_environment_only(redis_url, redis_prefix, tmp_path, secrets_key,
                                                         monkeypatch):
    monkeypatch.setenv(sealing.SECRETS_KEY_ENV, secrets_key)  # as an operator's environment would hold it
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys(redis_prefix)
    backend = LocalBackend(redis_url, redis_prefix, tmp_path / "logs", env={"ARENA_WORKER_THREADS": "1"})
    assert backend.secrets_key == secrets_key
    with FaultyServer() as server:
        try:
            pid = backend.start("w-sealed", spec(server.base_url, sealing.seal(secrets_key, KEY)))
            wait_until(lambda: client.hget(keys.worker("w-sealed"), "state") == protocol.W_READY, 60,
                       f"the worker never became ready: {backend.log_tail('w-sealed', 20)}")
            job = push(client, keys, "w-sealed")
            events = read_events(client, keys, job.generation_id)
            assert events[-1]["type"] == protocol.DONE, events[-1]
            assert server.requests == [("ok", f"Bearer {KEY}")]  # the real request carried the key

            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            assert f"{STORED_KEY_ENV}={KEY}".encode() in environ
            assert not any(v.startswith(sealing.SECRETS_KEY_ENV.encode() + b"=") for v in environ)  # not the master
            assert KEY.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
            for name in client.scan_iter(match=f"{redis_prefix}:*"):
                assert KEY not in repr(value_of(client, name)), name
        finally:
            backend.shutdown()
    assert KEY not in (tmp_path / "logs" / "worker-w-sealed.log").read_text()


def test_a_key_this_machine_cannot_open_fails_the_worker_with_the_reason(redis_url, redis_prefix, tmp_path,
                                                                         secrets_key):
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys(redis_prefix)
    other_machines = Fernet.generate_key().decode()
    backend = LocalBackend(redis_url, redis_prefix, tmp_path / "logs", env={"ARENA_WORKER_THREADS": "1"},
                           secrets_key=other_machines)
    try:
        backend.start("w-unopened", spec("http://127.0.0.1:9/v1", sealing.seal(secrets_key, KEY)))
        wait_until(lambda: client.hget(keys.worker("w-unopened"), "state") == protocol.W_FAILED, 60,
                   "the worker did not fail")
        assert "stored API key did not reach the worker" in client.hget(keys.worker("w-unopened"), "error")
    finally:
        backend.shutdown()


def test_seal_and_unseal(secrets_key):
    sealed = sealing.seal(secrets_key, KEY)
    assert KEY not in sealed and sealing.unseal(secrets_key, sealed) == KEY
    with pytest.raises(sealing.SealError):
        sealing.unseal(Fernet.generate_key().decode(), sealed)
    with pytest.raises(sealing.SealError):
        sealing.unseal("not a key", sealed)
