"""What a failure may tell a user: the reason without the server's paths or tracebacks. Pure.

A failure's reason often carries a worker's log line ("gguf file 'x.gguf' not found in
/home/arena/.cache/...", a traceback's last frames): useful to staff, who read the log line
itself (the worker's log, and the raw reason kept in `Generation.metrics["failure_detail"]`),
but a map of the server's disk for anyone else. `public_reason` keeps the sentence and drops
the rest: filesystem paths become `<path>`, `File "x.py", line N` frames and a traceback's
header and frames are dropped (its last line, the exception, is kept, redacted likewise).
"""

from __future__ import annotations

import re

PATH = "<path>"
_TRACEBACK = "Traceback (most recent call last)"
# A frame line: File "/x/y.py", line 12, in f (the path inside is dropped with it).
_FRAME = re.compile(r'\s*File "[^"]*", line \d+(?:, in [^\n]*)?')
# Absolute POSIX paths of two segments or more (/home/u/..., /work/..., /tmp/x), ~/ paths and
# Windows drive paths; not URLs (://host/path) nor "tokens/s" (a word before the slash).
_POSIX = re.compile(r"(?<![\w:/.\-])(?:~|\.{1,2})?/(?:[\w.@+\-]+/)+[\w.@+\-]*|(?<![\w:/.\-])~/[\w.@+\-/]*")
_WINDOWS = re.compile(r"\b[A-Za-z]:\\(?:[^\s\\'\"]+\\?)+")
# Relative paths into an installation: lib/python3.11/site-packages/x/y.py and the like.
_INSTALLED = re.compile(r"[\w.\-/\\]*(?:site-packages|dist-packages)[\w.\-/\\]*")
_LINE_NO = re.compile(r",? line \d+\b")


def public_reason(text: str) -> str:
    """`text` as a user who is not staff may read it (see the module's docstring)."""
    if not text:
        return text
    if _TRACEBACK in text:
        head, _, tail = text.partition(_TRACEBACK)
        lines = [ln for ln in tail.splitlines() if ln.strip() and not _FRAME.match(ln) and not ln.startswith("    ")]
        lines = [ln for ln in lines if not ln.strip().startswith(":")]  # the header's own ":" line end
        last = lines[-1].strip() if lines else ""
        text = " ".join(part for part in (head.strip().rstrip("(:").strip(), last) if part)
    text = _FRAME.sub("", text)
    text = _INSTALLED.sub(PATH, text)
    text = _WINDOWS.sub(PATH, text)
    text = _POSIX.sub(PATH, text)
    text = _LINE_NO.sub("", text) if PATH in text else text
    text = re.sub(r"\(\s*\)", "", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip().rstrip("(").strip()
