"""`manage.py arena_eval`, the CI gate, end to end against the running application: a real process
(as a CI job runs it) imports a suite file, starts a run of two packaged models that the app's
Celery worker, orchestrator and model workers serve, waits for it, and exits by the gate: 0 with
checks every answer meets, 1 with a check no answer can meet (its JUnit XML and JSON read
back), 0 again against the first run (greedy answers, loose checks: nothing regressed), and 2
for an unknown model, before anything runs."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
import xml.etree.ElementTree as ET

import pytest

from harness.app import ROOT

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.timeout(900)]
MODELS = "smollm2-135m,smollm2-135m-llamacpp"
MARKER = f"marker-{uuid.uuid4().hex}"  # no answer can hold it
SUITE = """\
name: CI gate {name}
defaults:
  checks:
    - {{type: tokens, min: 1, name: answers}}
    - {{type: ttft, max: 120, name: starts within 120 s}}
prompts:
  - prompt: What is the capital of France? One word.
  - prompt: Name a primary colour.
    checks: [{{type: not_contains, value: "{marker}", name: no marker}}]
"""


def arena_eval(live_app, *args: str, timeout: float = 500) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", "arena_eval", *args], cwd=ROOT, env=live_app.env,
                          capture_output=True, text=True, timeout=timeout)


def test_the_ci_command_gates_a_real_run(live_app, tmp_path):
    name = uuid.uuid4().hex[:8]
    suite = tmp_path / "gate.yaml"
    suite.write_text(SUITE.format(name=name, marker=MARKER))
    junit, summary = tmp_path / "gate.xml", tmp_path / "gate.json"
    first = arena_eval(live_app, str(suite), "--models", MODELS, "--owner", "admin", "--max-new-tokens", "16",
                       "--timeout", "400", "--junit", str(junit), "--json", str(summary))
    assert first.returncode == 0, first.stderr[-3000:]
    assert "The gate passed." in first.stderr
    for slug in MODELS.split(","):
        assert slug in first.stdout
    body = json.loads(summary.read_text())
    assert body["run"]["state"] == "done" and body["exit_code"] == 0
    assert [(r["checked"], r["passed"], r["no_answer"]) for r in body["contestants"]] == [(2, 2, 0), (2, 2, 0)]
    root = ET.parse(junit).getroot()
    assert root.get("tests") == "4" and root.get("failures") == "0"
    assert all(case.find("system-out").text for case in root.iter("testcase"))  # the real answers
    first_run = body["run"]["id"]

    # A new version whose check no answer can pass: exit 1, each failure named in the JUnit file.
    suite.write_text(SUITE.format(name=name, marker=MARKER).replace('not_contains, value: "', 'contains, value: "'))
    failing = arena_eval(live_app, str(suite), "--models", MODELS, "--owner", "admin", "--max-new-tokens", "16",
                         "--timeout", "400", "--min-pass", "0.9", "--junit", str(junit), "--json", str(summary))
    assert failing.returncode == 1, failing.stderr[-3000:]
    assert "below 90%" in failing.stderr
    body = json.loads(summary.read_text())
    assert body["suite"]["new_version"] and body["suite"]["version"] == 2
    assert [r["passed"] for r in body["contestants"]] == [1, 1]
    failures = list(ET.parse(junit).getroot().iter("failure"))
    assert len(failures) == 2
    assert all("no marker" in f.get("message") and MARKER in f.text for f in failures)

    # The first version's file again, against the first run: a third version, nothing regressed.
    suite.write_text(SUITE.format(name=name, marker=MARKER))
    again = arena_eval(live_app, str(suite), "--models", MODELS, "--owner", "admin", "--max-new-tokens", "16",
                       "--timeout", "400", "--against", first_run, "--json", str(summary))
    assert again.returncode == 0, again.stderr[-3000:]
    body = json.loads(summary.read_text())
    assert body["against"]["regressions"] == 0 and body["against"]["comparison"]["prompts"]["matched"] == 2
    assert "0 regression(s) over 2 matched prompts" in again.stdout

    bad = arena_eval(live_app, str(suite), "--models", "smollm2-135m,no-such-model", "--owner", "admin", timeout=120)
    assert bad.returncode == 2 and "No catalogue model has the slug 'no-such-model'" in bad.stderr
