"""Integration on the real SmolLM2-135M-Instruct (the packaged Q4_1 GGUF), nothing
replaced: dequantisation, the on-disk cache (in a temporary folder), the engine,
and a worker subprocess over real Redis. Slow: about 30 s on 2 cores.
"""

import shutil
import signal
import time
import uuid

import pytest
import redis

from inference import protocol
from inference.chunks import TokenChunk
from inference.engine import Engine
from inference.loading import cache_key, load
from inference.protocol import Job, Keys, ModelSpec, SamplingParams
from inference.sources import PACKAGED_SMOLLM2, resolve_source

from .workers import WorkerProcess, read_events

pytestmark = pytest.mark.slow

SPEC = ModelSpec(slug="smollm2", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1])
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
GREEDY = SamplingParams(temperature=0.0, max_new_tokens=24)


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARENA_MODEL_CACHE", str(folder))
        yield folder
    shutil.rmtree(folder, ignore_errors=True)  # 540 MB; pytest keeps the last runs' tmp folders


@pytest.fixture(scope="module")
def uncached(model_cache):
    return load(SPEC)


@pytest.fixture(scope="module")
def cached(uncached):
    return load(SPEC)


def answer(loaded, messages=QUESTION, params=GREEDY) -> str:
    engine = Engine.from_loaded(loaded)
    return "".join(c.text_delta for c in engine.stream(engine.encode(messages), params) if isinstance(c, TokenChunk))


def test_disk_cache_makes_the_second_load_faster(model_cache, uncached, cached):
    assert (model_cache / cache_key(resolve_source(*PACKAGED_SMOLLM2)) / "config.json").is_file()
    print(f"\nSmolLM2 cold start: {uncached.load_s:.1f} s from GGUF, {cached.load_s:.1f} s from the cache")
    assert cached.load_s < uncached.load_s / 3
    assert cached.context_length == uncached.context_length == 8192
    assert cached.weight_bytes == uncached.weight_bytes


def test_cached_model_answers_like_the_gguf_one(uncached, cached):
    assert answer(cached) == answer(uncached)


def test_capital_of_france(cached):
    assert "Paris" in answer(cached)


def test_worker_serves_smollm2_over_redis(cached, model_cache, redis_url, tmp_path):
    prefix = f"arena-test-{uuid.uuid4().hex[:12]}"
    keys = Keys(prefix)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    worker = WorkerProcess(
        "smol",
        SPEC.to_json(),
        redis_url,
        prefix,
        tmp_path / "worker.log",
        env={"ARENA_MODEL_CACHE": str(model_cache), "ARENA_WORKER_THREADS": ""},
    )
    try:
        status = worker.wait_for_state(client, keys.worker("smol"), {protocol.W_READY})
        assert float(status["load_s"]) < 10  # the cache filled above is used
        job = Job(generation_id=uuid.uuid4().hex, messages=QUESTION, params=GREEDY)
        client.rpush(keys.worker_jobs("smol"), job.to_json())
        done = read_events(client, keys, job.generation_id, timeout=60)[-1]
        assert done["type"] == protocol.DONE, done
        assert "Paris" in done["text"]
        assert done["metrics"]["decode_tokens_per_s"] > 1
    finally:
        worker.stop()
        for key in client.scan_iter(match=f"{prefix}:*", count=500):
            client.delete(key)
        client.close()


def test_sigterm_while_converting_stops_promptly(redis_url, tmp_path):
    """A worker stopped during the slow GGUF conversion exits at once (not after the
    conversion) and heartbeats until then, although the conversion keeps a core busy."""
    prefix = f"arena-test-{uuid.uuid4().hex[:12]}"
    keys = Keys(prefix)
    cache = tmp_path / "empty-cache"
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    worker = WorkerProcess(
        "smol", SPEC.to_json(), redis_url, prefix, tmp_path / "worker.log", env={"ARENA_MODEL_CACHE": str(cache)}
    )
    try:
        worker.wait_for_state(client, keys.worker("smol"), {protocol.W_STARTING})
        deadline = time.monotonic() + 6  # imports, then well into the ~18 s conversion
        while time.monotonic() < deadline:
            assert client.exists(keys.worker_heartbeat("smol")), "heartbeat lapsed while loading"
            time.sleep(0.2)
        assert client.hget(keys.worker("smol"), "state") == protocol.W_STARTING
        worker.proc.send_signal(signal.SIGTERM)
        assert worker.proc.wait(timeout=5) == 0, worker.log_text()
        assert client.hget(keys.worker("smol"), "state") == protocol.W_STOPPED
        assert not client.exists(keys.worker_heartbeat("smol"))
        assert not cache.exists() or not any(cache.iterdir())
    finally:
        worker.stop()
        for key in client.scan_iter(match=f"{prefix}:*", count=500):
            client.delete(key)
        client.close()
