"""Catalogue sources validated without importing a model's package, and failure reasons that
tell a user no server path or traceback (inference/sources.check_source, inference/public_text)."""

import subprocess
import sys

import pytest

from inference.public_text import PATH, public_reason
from inference.sources import ModelSourceError, check_source

TRACEBACK = ("Worker exited with code 1 (Traceback (most recent call last):\n"
             "  File \"/work/main/inference/worker.py\", line 12, in main\n    load()\n"
             "ValueError: bad file /tmp/abc/def.bin)")


@pytest.mark.parametrize(("raw", "public"), [
    ("gguf file 'x.gguf' not found in /home/arena/.cache/llm-arena/models/foo",
     f"gguf file 'x.gguf' not found in {PATH}"),
    ("No model at '/work/main/var/models/x': the path does not exist",
     f"No model at '{PATH}': the path does not exist"),
    (TRACEBACK,
     f"Worker exited with code 1 ValueError: bad file {PATH})"),
    ('Worker exited with code 1 (  File "/usr/lib/python3.11/site-packages/torch/x.py", line 5, in f)',
     "Worker exited with code 1"),
    ("error in lib/python3.11/site-packages/transformers/modeling.py line 3", f"error in {PATH}"),
    ("C:\\Users\\me\\model.gguf missing", f"{PATH} missing"),
    ("~/.cache/llm-arena/models missing", f"{PATH} missing"),
])
def test_paths_and_tracebacks_are_dropped(raw, public):
    assert public_reason(raw) == public
    assert "/home" not in public and "/work" not in public and "Traceback" not in public and "line " not in public


@pytest.mark.parametrize("text", [
    "The prompt is longer than the context (4096 tokens).",
    "could not connect to http://127.0.0.1:8080/v1/chat/completions (12.5 tokens/s) 3/4 done",
    "The server restarted while this answer was being written; the partial answer was kept. Send again.",
    "",
])
def test_a_plain_reason_is_left_alone(text):
    assert public_reason(text) == text


def test_a_chunked_package_is_validated_without_being_imported(booby_trapped):
    path = check_source("package:trap_gguf_pkg", "trap.gguf")
    assert path.name == "trap.gguf"
    assert not booby_trapped.exists()  # its code never ran
    assert "trap_gguf_pkg" not in sys.modules
    with pytest.raises(ModelSourceError, match="not found"):
        check_source("package:trap_gguf_pkg", "other.gguf")
    assert not booby_trapped.exists()


def test_an_installed_chunked_package_is_not_imported_by_validation():
    """The real gemma package, in a fresh interpreter: validation imports none of it."""
    code = ("import sys; from inference.sources import check_source, PACKAGED_GEMMA3; "
            "p = check_source(*PACKAGED_GEMMA3); "
            "print(p.name, any(m.startswith('gemma3_270m') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["gemma-3-270m-q4_k_m.gguf", "False"]
