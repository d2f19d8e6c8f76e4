"""Model loading. Real: transformers loading the tiny Llama checkpoint from disk,
save_pretrained/from_pretrained into a real cache folder. In the cache tests only
the GGUF dequantisation step (`load_gguf`) is replaced by one returning the tiny
model, so the cache's own logic runs in milliseconds; test_smollm2.py covers a real
GGUF end to end.
"""

import os

import pytest
import torch

from inference import loading
from inference.loading import LoadedModel, ModelLoadError, cache_key, load, pick_dtype
from inference.protocol import ModelSpec


def spec_for(folder, **overrides) -> ModelSpec:
    return ModelSpec(slug="tiny", source=str(folder), **overrides)


def test_loads_a_checkpoint_folder(tiny_model_dir, tiny_model):
    loaded = load(spec_for(tiny_model_dir))
    assert isinstance(loaded, LoadedModel)
    assert loaded.device.type == "cpu" and loaded.dtype == torch.float32
    assert next(loaded.model.parameters()).dtype == torch.float32
    assert loaded.context_length == 4096
    assert loaded.weight_bytes >= sum(p.numel() * 4 for p in tiny_model.parameters())
    assert loaded.load_s > 0
    assert not loaded.model.training
    assert loaded.tokenizer.eos_token_id == 2


def test_precision_overrides_the_default(tiny_model_dir):
    loaded = load(spec_for(tiny_model_dir, precision="bf16"))
    assert loaded.dtype == torch.bfloat16 and next(loaded.model.parameters()).dtype == torch.bfloat16


@pytest.mark.parametrize("asked, expected", [(1000, 1000), (100_000, 4096), (0, 4096)])
def test_context_length_never_exceeds_the_model(tiny_model_dir, asked, expected):
    assert load(spec_for(tiny_model_dir, context_length=asked)).context_length == expected


def test_default_dtype_is_fp32_on_cpu():
    assert pick_dtype("auto", torch.device("cpu")) == torch.float32
    assert pick_dtype("fp16", torch.device("cpu")) == torch.float16


def test_unknown_kind_and_precision(tiny_model_dir):
    with pytest.raises(ModelLoadError, match="Unknown model kind 'magic'"):
        load(spec_for(tiny_model_dir, kind="magic"))
    with pytest.raises(ModelLoadError, match="Unknown precision 'int3'"):
        load(spec_for(tiny_model_dir, precision="int3"))


def test_missing_source_is_a_load_error():
    with pytest.raises(ModelLoadError, match="No model at '/nowhere/at/all'"):
        load(ModelSpec(slug="x", source="/nowhere/at/all"))


def test_broken_checkpoint_is_a_load_error(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError) as caught:
        load(spec_for(tmp_path))
    assert caught.value.__cause__ is not None
    assert len(str(caught.value).splitlines()) == 1


def test_cache_key_follows_the_files_content(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"one")
    before = cache_key(gguf)
    assert before.startswith("m-") and cache_key(gguf) == before
    # The same content elsewhere (a reinstall, another venv) finds the same entry.
    (tmp_path / "elsewhere").mkdir()
    copy = tmp_path / "elsewhere" / "m.gguf"
    copy.write_bytes(b"one")
    os.utime(copy, ns=(1, 1))
    assert cache_key(copy) == before
    gguf.write_bytes(b"other")
    assert cache_key(gguf) != before


@pytest.fixture
def fake_gguf(tmp_path, monkeypatch, tiny_model, tokenizer):
    """A GGUF path whose 'dequantisation' returns the tiny model; counts conversions."""
    gguf = tmp_path / "weights" / "tiny.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF stand-in")
    conversions = []

    def convert(path):
        conversions.append(path)
        return tokenizer, tiny_model

    monkeypatch.setattr(loading, "load_gguf", convert)
    monkeypatch.setenv("ARENA_MODEL_CACHE", str(tmp_path / "cache"))
    return gguf, conversions


def test_gguf_is_converted_once_then_read_from_the_cache(fake_gguf, tmp_path, tiny_model):
    gguf, conversions = fake_gguf
    first = load(ModelSpec(slug="t", source=str(gguf)))
    entry = tmp_path / "cache" / cache_key(gguf)
    assert conversions == [gguf]
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in entry.iterdir()}
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]  # no temporary folder left behind
    assert "quantization_config" not in (entry / "config.json").read_text()

    second = load(ModelSpec(slug="t", source=str(gguf)))
    assert conversions == [gguf]
    ids = torch.tensor([[5, 6, 7]])
    with torch.inference_mode():
        expected = tiny_model(ids).logits
        assert torch.equal(first.model(ids).logits, expected)
        assert torch.equal(second.model(ids).logits, expected)


def test_damaged_cache_entry_is_rebuilt(fake_gguf, tmp_path):
    gguf, conversions = fake_gguf
    load(ModelSpec(slug="t", source=str(gguf)))
    weights = tmp_path / "cache" / cache_key(gguf) / "model.safetensors"
    weights.write_bytes(b"truncated")
    load(ModelSpec(slug="t", source=str(gguf)))
    assert len(conversions) == 2
    assert weights.stat().st_size > 1000


def test_unwritable_cache_still_loads(fake_gguf, tmp_path, monkeypatch):
    gguf, conversions = fake_gguf
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("ARENA_MODEL_CACHE", str(blocker / "cache"))
    loaded = load(ModelSpec(slug="t", source=str(gguf)))
    assert conversions == [gguf] and loaded.context_length == 4096


def test_a_served_model_answers_a_warm_up_before_its_worker_is_ready(tiny_model_dir):
    """The first request's one-time costs are spent while loading (inference.engines.warm_up), not on the
    first user's time to first token: the model ran a forward pass before serve() returned."""
    from inference.engines import serve

    ran = []
    hook = torch.nn.modules.module.register_module_forward_hook(lambda module, _i, _o: ran.append(type(module)))
    try:
        served = serve(spec_for(tiny_model_dir), max_batch=1)
    finally:
        hook.remove()
    assert any(kind.__name__.endswith("ForCausalLM") for kind in ran) and served.load_s > 0
