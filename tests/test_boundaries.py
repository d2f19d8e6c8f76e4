"""What importing really loads: inference/ and orchestration/ nothing of the web side (DESIGN.md,
Boundaries), and the web side nothing of the model stack.

The import statements themselves (at any depth of a file, inside functions too) are checked by
import-linter's contracts (`.importlinter`, run by `make lint`); these tests see what those
miss: a module loaded through a third package, at run time.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
WEB_SIDE = frozenset({"django", "channels", "arena"})
# What each package may not load: the web side, and for inference the orchestrator above it too.
FORBIDDEN = {"inference": WEB_SIDE | {"orchestration"}, "orchestration": WEB_SIDE}


IMPORT_ALL = """
import importlib, json, pkgutil, sys
package = importlib.import_module(sys.argv[1])
names = [sys.argv[1]] + [m.name for m in pkgutil.walk_packages(package.__path__, sys.argv[1] + ".")]
for name in names:
    importlib.import_module(name)
print(json.dumps({"modules": names, "loaded": sorted({m.split(".")[0] for m in sys.modules})}))
"""


@pytest.mark.timeout(180)
@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_importing_every_module_loads_nothing_of_the_web_side(package):
    """In a fresh interpreter (this one has Django loaded), with no settings to find."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run([sys.executable, "-c", IMPORT_ALL, package], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=170)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(report["modules"]) > 3  # walked the package, not only its __init__
    assert not set(report["loaded"]) & FORBIDDEN[package]


WEB_PROCESS = """
import sys, django
django.setup()
import arena.asgi, arena.celery, arena.urls
print(" ".join(sorted({m.split(".")[0] for m in sys.modules} & {"torch", "transformers", "gptqmodel"})))
"""


@pytest.mark.timeout(180)
def test_the_web_side_starts_without_the_model_stack():
    """uvicorn, Celery and every manage.py command start without torch or transformers (seconds
    each): only inference workers load models. A web page that needs a model fact asks a worker
    or reads a file, it never imports the model stack."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "arena.settings"}
    result = subprocess.run([sys.executable, "-c", WEB_PROCESS], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=170)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "", f"the web side imported {result.stdout.strip()}"
