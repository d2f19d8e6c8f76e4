"""The answer cache end to end on the running application (docs/suites.md, "Cache"): a greedy suite
run answered by real llama.cpp workers, then the same suite run again with reuse_answers. The re-run
generates nothing: every answer is the first run's (cached_from), none ever took a place in the line
(no admission: the only way to a worker's job) and no worker wrote a token stream for any."""

from __future__ import annotations

import json
import time

import pytest

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.timeout(600)]
CONTESTANTS = ["smollm2-135m-llamacpp", "gemma-3-270m-llamacpp"]
PROMPTS = [{"prompt": "What is the capital of France? One word."}, {"prompt": "Name a primary colour."}]


def finished(live_app, token, run_id: str, timeout: float) -> tuple[dict, float]:
    """The run's JSON once it has ended, and how long that took from now."""
    began = time.time()
    while time.time() - began < timeout:
        state = live_app.api(token, "get", f"/api/v1/suite-runs/{run_id}").json()
        if state["state"] != "running":
            return state, time.time() - began
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} did not end in {timeout} s")


def answers(live_app, run_id: str) -> list[dict]:
    """Each answer's generation, and whether it has a token stream (only a worker writes one)."""
    code = ("import json; from arena import streams; from arena.suite_runs.models import SuiteAnswer; "
            "client, keys = streams.client(), streams.keys(); "
            f"rows = SuiteAnswer.objects.filter(run_id={run_id!r}).select_related('generation'); "
            "print(json.dumps([{'id': str(a.generation_id), 'status': a.generation.status, "
            "'cached_from': str(a.generation.cached_from_id or ''), 'admitted': a.generation.admitted_at is not None, "
            "'streamed': bool(client.exists(keys.stream(str(a.generation_id)))), 'text': a.generation.text} "
            "for a in rows]))")
    return json.loads(live_app.manage("shell", "-c", code).splitlines()[-1])


def test_a_rerun_with_reuse_generates_nothing(live_app):
    token = live_app.token("admin")
    created = live_app.api(token, "post", "/api/v1/suites", json={"name": "Cached suite", "prompts": PROMPTS})
    assert created.status_code == 201, created.text
    body = {"suite": created.json()["id"], "contestants": CONTESTANTS,
            "params": {"temperature": 0.0, "max_new_tokens": 12}}
    first = live_app.api(token, "post", "/api/v1/suite-runs", json=body).json()
    state, took = finished(live_app, token, first["id"], 420)
    assert state["state"] == "done", state
    generated = answers(live_app, first["id"])
    assert len(generated) == 4 and all(a["status"] == "done" and a["streamed"] and not a["cached_from"]
                                       for a in generated), generated

    second = live_app.api(token, "post", "/api/v1/suite-runs", json={**body, "reuse_answers": True}).json()
    assert second["reuse_answers"] is True
    state, reused_took = finished(live_app, token, second["id"], 60)
    print(f"\nfirst run {took:.1f} s; the re-run with reuse {reused_took:.1f} s")
    assert state["state"] == "done", state
    reused = answers(live_app, second["id"])
    by_id = {a["id"]: a for a in generated}
    assert len(reused) == 4
    for answer in reused:
        assert answer["cached_from"] in by_id and answer["text"] == by_id[answer["cached_from"]]["text"]
        assert not answer["admitted"] and not answer["streamed"]  # no place in line, no worker wrote a token
