"""A suite with rubric checks run end to end on the running application with real packaged models:
each answer lands with its rubric check pending (no verdict, not counted), the judge's grade is a
generation of its own whose constrained reply is valid JSON, and once it lands the check's result
is stored with the others, the verdict and pass rates counted, and the run page shows each grade
with its reason and the judge's reliability, at the desktop and the phone widths (screenshots
under var/test-artefacts)."""

from __future__ import annotations

import json
import time

import pytest

from .artefacts import DESKTOP, PHONE, screenshot

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(600)]
CONTESTANTS = ["smollm2-135m-llamacpp", "gemma-3-270m-llamacpp"]
JUDGE = "smollm2-135m"
PROMPTS = [
    {"prompt": "What is the capital of France? One word.",
     "checks": [{"type": "rubric", "value": "The answer names Paris.", "name": "names Paris"}]},
    {"prompt": "Name a primary colour.",
     "checks": [{"type": "rubric", "value": "The answer names red, yellow or blue.", "scale": "1-5",
                 "threshold": 3, "name": "a primary colour", "judge": JUDGE}]},
]


def pending(answer: dict) -> bool:
    return any(r.get("pending") for r in answer["checks"])


def test_rubric_checks_are_pending_then_graded_stored_and_counted(live_app, page):
    token = live_app.token("admin")
    created = live_app.api(token, "post", "/api/v1/suites", json={
        "name": "Rubric suite", "default_checks": [{"type": "words", "max": 60, "name": "under 60 words"}],
        "prompts": PROMPTS})
    assert created.status_code == 201, created.text
    refused = live_app.api(token, "post", "/api/v1/suites", json={
        "name": "Bad judge", "prompts": [{"prompt": "x", "checks": [{"type": "rubric", "value": "y",
                                                                     "judge": "no-such-judge"}]}]})
    assert refused.status_code == 400 and "'no-such-judge' is not a catalogue entry" in refused.text
    response = live_app.api(token, "post", "/api/v1/suite-runs", json={
        "suite": created.json()["id"], "contestants": CONTESTANTS, "judge": JUDGE,
        "params": {"temperature": 0, "max_new_tokens": 24}})
    assert response.status_code == 201, response.text
    run_id = response.json()["id"]
    live_app.log_in_page(page, f"suite-runs/{run_id}/")

    seen_pending = shot_pending = False
    deadline = time.time() + 480
    while time.time() < deadline:
        state = live_app.api(token, "get", f"/api/v1/suite-runs/{run_id}").json()
        answers = live_app.api(token, "get", f"/api/v1/suite-runs/{run_id}/answers").json()["answers"]
        waiting = [a for a in answers if pending(a)]
        for answer in waiting:  # a pending check: no verdict, nothing counted for it
            assert answer["passed"] is None and answer["score"] is None, answer
        seen_pending = seen_pending or bool(waiting)
        if waiting and not shot_pending and page.locator('.suite-answer[data-checks="pending"]').count():
            screenshot(page, "suite-run-rubric-pending-desktop")
            shot_pending = True
        if state["state"] != "running":
            break
        page.wait_for_timeout(500)
    assert state["state"] == "done", state
    print(f"\nseen pending through the API: {seen_pending}; on the page: {shot_pending}")

    answers = live_app.api(token, "get", f"/api/v1/suite-runs/{run_id}/answers").json()["answers"]
    assert len(answers) == len(PROMPTS) * len(CONTESTANTS)
    replies = []
    for answer in answers:
        assert answer["status"] == "done" and answer["passed"] is not None, answer
        graded = answer["checks"][1]
        assert graded["type"] == "rubric" and graded["pending"] is False and graded["error"] == "", graded
        [grade] = graded["grades"]
        assert grade["judge"] == JUDGE and grade["grade"] is not None and grade["reason"], grade
        assert answer["passed"] == (answer["checks"][0]["passed"] and graded["passed"])
        generation = live_app.api(token, "get", f"/api/v1/generations/{grade['generation']}").json()
        assert generation["status"] == "done"
        reply = json.loads(generation["text"])  # the constrained reply: valid JSON, the grade's keys
        assert set(reply) == ({"pass", "reason"} if answer["prompt_position"] == 1 else {"score", "reason"})
        replies.append(generation["text"])
    print("the judge's replies:", replies)
    rates = {r["model"]: r for r in state["checks"]["contestants"]}
    assert all(rates[m]["total"] == len(PROMPTS) for m in CONTESTANTS)  # every answer counted, once graded
    per_check = {c["name"]: c for c in state["checks"]["checks"]}
    assert set(per_check) == {"under 60 words", "names Paris", "a primary colour"}
    assert [r["judge"] for r in state["rubric_reliability"]] == [JUDGE]

    # The page swapped in the end by itself: every answer's verdict, each grade with its reason.
    page.wait_for_selector('#suite-run-progress[data-state="done"]', timeout=15_000)
    page.wait_for_selector("#suite-run-checks .rubric-reliability", timeout=15_000)
    verdicts = page.eval_on_selector_all(".suite-answer", "els => els.map(e => e.dataset.checks)")
    assert verdicts == ["pass" if a["passed"] else "fail" for a in answers], verdicts
    # Each answer's cell says its grade's reason: among the failures when it failed, else with the grades.
    cells = page.locator(".suite-answer").all_inner_texts()
    for answer, cell in zip(answers, cells, strict=True):
        assert answer["checks"][1]["grades"][0]["reason"] in " ".join(cell.split()), (answer, cell)
    assert page.locator(".rubric-grades li").count() == sum(a["checks"][1]["passed"] for a in answers)
    assert page.locator(f'.rubric-reliability tr[data-judge="{JUDGE}"]').count() == 1
    for details in page.locator(".suite-answer details").all()[:2]:
        details.evaluate("e => e.open = true")
    screenshot(page, "suite-run-rubric-desktop")
    page.set_viewport_size(PHONE)
    screenshot(page, "suite-run-rubric-phone")
    page.set_viewport_size(DESKTOP)
