"""The generated secret key: Django processes that start at once on a fresh data directory (the
web, Celery and orchestrator run as separate services started together, or several uvicorn
processes) must all come up, sharing one key kept in a private file."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRINT_KEY = "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"


def test_processes_starting_together_share_one_private_key(tmp_path):
    env = {**os.environ, "ARENA_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "arena.settings"}
    env.pop("ARENA_SECRET_KEY", None)
    procs = [subprocess.Popen([sys.executable, "-c", PRINT_KEY], cwd=ROOT, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 4, [err[-500:] for _out, err in outputs]
    keys = {out.strip() for out, _err in outputs}
    assert len(keys) == 1 and len(keys.pop()) >= 50
    key_file = tmp_path / "secret_key"
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("secret_key.")]  # no drafts left behind
