"""The live-app harness (harness/) and the benchmarks (bench/) import nothing of tests/, and the
harness nothing of bench/: the tests and the benchmarks share the harness, never each other's
internals (docs/testing.md, Layout). Every import statement counts, inside functions too."""

import ast
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# What each package may not import.
FORBIDDEN = {"harness": {"tests", "bench"}, "bench": {"tests"}}


def imported_packages(path: Path) -> set[str]:
    """The top-level package of every absolute import in a file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_the_package_imports_no_tests(package):
    files = sorted((REPO_ROOT / package).rglob("*.py"))
    assert files
    wrong = {str(f.relative_to(REPO_ROOT)): sorted(imported_packages(f) & FORBIDDEN[package]) for f in files}
    assert {f: names for f, names in wrong.items() if names} == {}
