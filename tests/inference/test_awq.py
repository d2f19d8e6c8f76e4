"""The "awq" worker kind (inference/awq.py).

The project venv has GPTQModel; tests that need it still skip in an environment
without it (it needs torch>=2.14.1). The real-quantiser
tests quantise a tiny random Llama whose layer widths suit AWQ (multiples of 64),
in a temporary model cache, in seconds.
"""

from __future__ import annotations

import json
import sys
import time
import uuid

import pytest
import torch

from inference import awq, loading, protocol
from inference.awq import AwqSettings, calibration_samples, is_awq_checkpoint
from inference.chunks import TokenChunk
from inference.engine import Engine
from inference.loading import ModelLoadError, load
from inference.protocol import Keys, ModelSpec, SamplingParams
from inference.quality import EVALUATION_TEXT
from tests.tiny_models import build_tiny_model

from .workers import push, read_events


@pytest.fixture
def gptqmodel():
    try:
        return awq.require_gptqmodel()  # sets GPTQModel's thread-pool size for 2 cores before importing it
    except ModelLoadError:
        pytest.skip("GPTQModel is not installed")


@pytest.fixture
def model_cache(tmp_path, monkeypatch):
    root = tmp_path / "model-cache"
    monkeypatch.setenv("ARENA_MODEL_CACHE", str(root))
    return root


@pytest.fixture
def progress_lines():
    lines: list[str] = []
    loading.set_progress_hook(lines.append)
    yield lines
    loading.set_progress_hook(None)


@pytest.fixture(scope="module")
def awq_sized_model_dir(tmp_path_factory, tokenizer):
    """A random 2-layer Llama whose linear layers AWQ accepts (in and out widths multiples of 64)."""
    # EOS never predicted, so greedy runs reach max_new_tokens (see build_tiny_model)
    model = build_tiny_model(len(tokenizer), hidden_size=64, intermediate_size=128, num_key_value_heads=4)
    folder = tmp_path_factory.mktemp("awq-sized-llama")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def awq_spec(folder) -> ModelSpec:
    return ModelSpec(slug="tiny-awq", source=str(folder), kind="awq")


def cached_entries(model_cache) -> list:
    """The AWQ cache's entry folders (beside them: each entry's lock file)."""
    return [p for p in (model_cache / "awq").iterdir() if p.is_dir()]


def greedy_ids(loaded, prompt: str = "Hello there", tokens: int = 8) -> list[int]:
    engine = Engine.from_loaded(loaded)
    ids = engine.encode([{"role": "user", "content": prompt}])
    params = SamplingParams(temperature=0.0, max_new_tokens=tokens)
    return [c.token_id for c in engine.stream(ids, params) if isinstance(c, TokenChunk)]


def test_without_gptqmodel_loading_fails_readably(tiny_model_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "gptqmodel", None)  # makes `import gptqmodel` raise ImportError
    with pytest.raises(ModelLoadError, match="AWQ needs GPTQModel, which is not installed"):
        load(awq_spec(tiny_model_dir))


@pytest.mark.parametrize(
    "files, expected",
    [
        ({"quantize_config.json": {"bits": 4, "group_size": 64, "quant_method": "awq"}}, True),
        ({"config.json": {"quantization_config": {"quant_method": "awq", "bits": 4}}}, True),
        ({"config.json": {"quantization_config": {"quant_method": "gptq", "bits": 4}}}, False),
        ({"config.json": {"model_type": "llama"}}, False),
        ({}, False),
    ],
)
def test_recognises_awq_checkpoints(tmp_path, files, expected):
    for name, content in files.items():
        (tmp_path / name).write_text(json.dumps(content))
    assert is_awq_checkpoint(tmp_path) is expected


def test_calibration_is_shipped_text_in_windows(tokenizer):
    settings = AwqSettings(sample_tokens=128, max_samples=10)
    samples = calibration_samples(tokenizer, settings)
    assert len(samples) == 10
    assert all(len(s["input_ids"]) == 128 and s["attention_mask"] == [1] * 128 for s in samples)
    assert "GNU GENERAL PUBLIC LICENSE" in tokenizer.decode(samples[0]["input_ids"])
    # Perplexity is measured on a different text than the quantiser saw.
    assert settings.calibration_text.read_text() != EVALUATION_TEXT.read_text()


def test_calibration_refuses_a_text_too_short(tokenizer, tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("tiny")
    with pytest.raises(ModelLoadError, match="too short"):
        calibration_samples(tokenizer, AwqSettings(calibration_text=short))


def test_cache_key_follows_settings_and_source(gptqmodel, awq_sized_model_dir, tmp_path):
    key = awq.awq_cache_key(awq_sized_model_dir, AwqSettings())
    assert key == awq.awq_cache_key(awq_sized_model_dir, AwqSettings())
    assert "w4g64" in key
    assert key != awq.awq_cache_key(awq_sized_model_dir, AwqSettings(group_size=128))
    assert key != awq.awq_cache_key(awq_sized_model_dir, AwqSettings(bits=8))
    assert key != awq.awq_cache_key(awq_sized_model_dir, AwqSettings(sym=True))
    other = tmp_path / "other.txt"
    other.write_text("other calibration text " * 100)
    assert key != awq.awq_cache_key(awq_sized_model_dir, AwqSettings(calibration_text=other))


def test_quantises_once_then_loads_the_cache(gptqmodel, awq_sized_model_dir, model_cache, progress_lines):
    full = load(ModelSpec(slug="tiny", source=str(awq_sized_model_dir)))
    first = load(awq_spec(awq_sized_model_dir))

    entries = [p for p in (model_cache / "awq").iterdir() if p.is_dir()]
    assert len(entries) == 1 and is_awq_checkpoint(entries[0])  # no tmp folder left behind
    assert not entries[0].with_name(f"{entries[0].name}.progress").exists()  # the shared progress went with the lock
    assert "AWQ: quantised layer 1/2 (50%)" in progress_lines
    assert "AWQ: quantised layer 2/2 (100%)" in progress_lines
    assert first.kind == "awq"
    q_proj = first.model.model.layers[0].self_attn.q_proj
    assert not isinstance(q_proj, torch.nn.Linear) and q_proj.qweight.dtype == torch.int32
    assert first.weight_bytes < full.weight_bytes

    progress_lines.clear()
    second = load(awq_spec(awq_sized_model_dir))
    assert not any("quantis" in line for line in progress_lines)
    assert greedy_ids(second) == greedy_ids(first)


def test_quantised_model_computes_nearly_what_the_full_one_does(gptqmodel, awq_sized_model_dir, model_cache):
    full = load(ModelSpec(slug="tiny", source=str(awq_sized_model_dir)))
    quantised = load(awq_spec(awq_sized_model_dir))
    ids = full.tokenizer("The quick brown fox jumps over the lazy dog", return_tensors="pt").input_ids
    with torch.no_grad():
        want = full.model(input_ids=ids).logits.flatten()
        got = quantised.model(input_ids=ids).logits.float().flatten()
    assert torch.nn.functional.cosine_similarity(want, got, dim=0) > 0.9
    assert not torch.equal(want, got)


def test_an_awq_checkpoint_source_loads_without_quantising(
    gptqmodel, awq_sized_model_dir, model_cache, progress_lines
):
    load(awq_spec(awq_sized_model_dir))
    (entry,) = cached_entries(model_cache)
    progress_lines.clear()
    direct = load(awq_spec(entry))
    assert progress_lines == []
    assert cached_entries(model_cache) == [entry]  # nothing quantised into a new entry
    assert len(greedy_ids(direct, tokens=4)) == 4


def test_a_worker_shows_quantisation_progress_then_serves(gptqmodel, awq_sized_model_dir, model_cache, start_worker,
                                                         redis_url):
    """The real worker process: progress lines reach its status hash (the UI shows them)."""
    import redis

    keys = Keys(f"arena-test-{uuid.uuid4().hex[:12]}")
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    worker = start_worker(awq_spec(awq_sized_model_dir).to_json(), keys.prefix,
                          env={"ARENA_MODEL_CACHE": str(model_cache)})
    status = worker.wait_for_state(client, keys.worker(worker.worker_id), {protocol.W_READY}, timeout=120)
    assert status["progress"].startswith("AWQ: quantised in")  # the last line before ready
    assert float(status["started_at"]) <= float(status["progress_at"]) <= float(status["ready_at"])
    assert "AWQ: quantised layer 2/2 (100%)" in worker.log_text()

    job = push(client, keys, worker.worker_id, params=SamplingParams(temperature=0.0, max_new_tokens=4))
    events = read_events(client, keys, job.generation_id)
    assert events[-1]["type"] == protocol.DONE and events[-1]["metrics"]["generated_tokens"] == 4
    for key in client.scan_iter(match=f"{keys.prefix}:*"):
        client.delete(key)



def test_layer_progress_reads_the_quantisers_lines():
    assert awq.layer_progress(awq.LAYER_LINE.format(done=3, layers=30, percent=10)) == (3, 30)
    assert awq.layer_progress(f"AWQ: quantised layer 12/30 (40%) {awq.BY_ANOTHER_PROCESS}") == (12, 30)
    assert awq.layer_progress("AWQ: calibrating on 4 samples of up to 512 tokens") is None


def test_the_cache_key_names_the_search_method(gptqmodel, awq_sized_model_dir, monkeypatch):
    key = awq.awq_cache_key(awq_sized_model_dir, AwqSettings())
    monkeypatch.setattr(awq.awq_search, "method", lambda: "gptqmodel-9.9-default")
    assert awq.awq_cache_key(awq_sized_model_dir, AwqSettings()) != key


def test_a_worker_waits_for_another_processs_quantisation_and_loads_its_result(
    gptqmodel, awq_sized_model_dir, model_cache, start_worker, redis_url
):
    """Two processes, one cache entry: the worker started while this test process quantises (as
    `make run`'s preparer would) passes the quantiser's progress on, then loads what it wrote."""
    import redis

    keys = Keys(f"arena-test-{uuid.uuid4().hex[:12]}")
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    settings = AwqSettings.from_env()
    entry = awq.cache_entry(awq_sized_model_dir, settings)
    mine: list[str] = []
    with awq.entry_lock(entry, mine.append) as shared_report:
        shared_report("AWQ: quantised layer 1/2 (50%)")
        worker = start_worker(awq_spec(awq_sized_model_dir).to_json(), keys.prefix,
                              env={"ARENA_MODEL_CACHE": str(model_cache)})
        waiting = f"AWQ: quantised layer 1/2 (50%) {awq.BY_ANOTHER_PROCESS}"
        wait_for_progress(client, keys.worker(worker.worker_id), waiting, worker)
        awq.quantize_into(awq_sized_model_dir, entry, settings, torch.device("cpu"), shared_report)
    status = worker.wait_for_state(client, keys.worker(worker.worker_id), {protocol.W_READY}, timeout=120)

    log = worker.log_text()
    assert "AWQ: another process is quantising this model; waiting for it" in log
    # It passed the quantiser's progress on (wait_for_progress saw it) and did not quantise again:
    # every calibrating/quantising line it logged is the other process's. (It reads that progress
    # once a second, so a quantisation this small may finish between two reads: how many of
    # those lines it saw depends on the machine's load.)
    quantiser_lines = [line for line in log.splitlines() if "AWQ: calibrating" in line or "AWQ: quantising" in line]
    assert all(line.endswith(awq.BY_ANOTHER_PROCESS) for line in quantiser_lines), quantiser_lines
    assert any(line.startswith("AWQ: calibrating") for line in mine)
    assert status["state"] == protocol.W_READY and cached_entries(model_cache) == [entry]
    for key in client.scan_iter(match=f"{keys.prefix}:*"):
        client.delete(key)


def wait_for_progress(client, key: str, wanted: str, worker, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while client.hget(key, "progress") != wanted:
        assert time.monotonic() < deadline, f"no {wanted!r} in {client.hgetall(key)}\n{worker.log_text()}"
        assert worker.proc.poll() is None, worker.log_text()
        time.sleep(0.05)


def test_the_lock_is_taken_at_once_when_free_and_its_progress_file_goes_with_it(tmp_path):
    entry = tmp_path / "awq" / "model-w4g64-0123"
    lines: list[str] = []
    with awq.entry_lock(entry, lines.append) as shared_report:
        shared_report("AWQ: quantised layer 1/30 (3%)")
        assert entry.with_name(f"{entry.name}.progress").read_text() == "AWQ: quantised layer 1/30 (3%)"
    assert lines == ["AWQ: quantised layer 1/30 (3%)"]  # no "waiting" line: nobody held it
    assert not entry.with_name(f"{entry.name}.progress").exists()
