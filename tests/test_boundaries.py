"""inference/ and orchestration/ know nothing of the web side (DESIGN.md, Boundaries), and the
web side loads nothing of the model stack.

Two checks, because each misses what the other sees: the import statements of every
file (an import inside a function that no test reaches), and what importing every
module really loads (an import the source hides, e.g. through a third package).
"""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
WEB_SIDE = frozenset({"django", "channels", "arena"})
# What each package may not import: the web side, and for inference the orchestrator above it too.
FORBIDDEN = {"inference": WEB_SIDE | {"orchestration"}, "orchestration": WEB_SIDE}


def imported_packages(path: Path) -> set[str]:
    """The top-level names of every absolute import in a file, at any depth of its code."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_file_imports_the_web_side(package):
    files = sorted((REPO_ROOT / package).rglob("*.py"))
    assert files
    offenders = {
        str(path.relative_to(REPO_ROOT)): sorted(bad)
        for path in files
        if (bad := imported_packages(path) & FORBIDDEN[package])
    }
    assert not offenders


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
    """daphne, Celery and every manage.py command start without torch or transformers (seconds
    each): only inference workers load models. A web page that needs a model fact asks a worker
    or reads a file, it never imports the model stack."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "arena.settings"}
    result = subprocess.run([sys.executable, "-c", WEB_PROCESS], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=170)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "", f"the web side imported {result.stdout.strip()}"
