"""A suite with checks run end to end on the running application with real packaged models: each
answer is checked as it lands (its results stored and served by the API with what each check
expected and got), and the run's page shows every answer's verdict and the pass rates with their
intervals, at the desktop and the phone widths (screenshots under var/test-artefacts)."""

from __future__ import annotations

import time

import pytest

from .artefacts import DESKTOP, PHONE, screenshot

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(600)]
CONTESTANTS = ["smollm2-135m", "smollm2-135m-llamacpp"]
DEFAULT_CHECKS = [{"type": "words", "max": 60, "name": "under 60 words"},
                  {"type": "ttft", "max": 30, "name": "starts within 30 s"},
                  {"type": "tokens", "min": 1}]
PROMPTS = [
    {"prompt": "What is the capital of France? One word.",
     "checks": [{"type": "contains", "value": "paris", "ignore_case": True, "name": "names Paris"}]},
    {"prompt": "Give a JSON object with a key 'city' naming a city.",
     "json_schema": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}},
                     "required": ["city"], "additionalProperties": False},
     "checks": [{"type": "json_schema", "value": {"type": "object", "required": ["city"]}}]},
    {"prompt": "Name a primary colour.", "reference": "Red, yellow or blue.",
     "checks": [{"type": "similar", "threshold": 0.05, "weight": 2},
                {"type": "regex", "value": "(a+)+$", "name": "ends with a"}]},
]


def test_answers_are_checked_as_they_land_and_the_page_shows_the_results(live_app, page):
    token = live_app.token("admin")
    created = live_app.api(token, "post", "/api/v1/suites", json={
        "name": "Checked suite", "default_checks": DEFAULT_CHECKS, "prompts": PROMPTS})
    assert created.status_code == 201, created.text
    response = live_app.api(token, "post", "/api/v1/suite-runs", json={
        "suite": created.json()["id"], "contestants": CONTESTANTS, "params": {"temperature": 0, "max_new_tokens": 24}})
    assert response.status_code == 201, response.text
    run_id = response.json()["id"]
    live_app.log_in_page(page, f"suite-runs/{run_id}/")

    deadline = time.time() + 480
    while time.time() < deadline:
        state = live_app.api(token, "get", f"/api/v1/suite-runs/{run_id}").json()
        if state["state"] != "running":
            break
        page.wait_for_timeout(2000)
    assert state["state"] == "done", state

    answers = live_app.api(token, "get", f"/api/v1/suite-runs/{run_id}/answers").json()["answers"]
    assert len(answers) == len(PROMPTS) * len(CONTESTANTS)
    for answer in answers:
        assert answer["status"] == "done" and answer["passed"] is not None, answer
        names = [r["name"] for r in answer["checks"]]
        assert names[:3] == ["under 60 words", "starts within 30 s", "tokens"], names
        measured = {r["name"]: r for r in answer["checks"]}
        assert measured["starts within 30 s"]["passed"] and measured["tokens"]["passed"]  # the real measures read
        assert all(r["expected"] and r["got"] for r in answer["checks"])
    json_answers = [a for a in answers if a["prompt_position"] == 2]
    assert all(a["checks"][3]["passed"] for a in json_answers)  # constrained decoding held, the check agrees
    rates = state["checks"]["contestants"]
    assert [r["model"] for r in rates] == CONTESTANTS and all(r["total"] == len(PROMPTS) for r in rates)
    assert all(r["low"] <= r["rate"] <= r["high"] for r in rates)

    # The page swapped in the end by itself: each answer's verdict, the pass rates with intervals.
    page.wait_for_selector('#suite-run-progress[data-state="done"]', timeout=15_000)
    page.wait_for_selector("#suite-run-checks .check-rates", timeout=15_000)
    verdicts = page.eval_on_selector_all(".suite-answer", "els => els.map(e => e.dataset.checks)")
    expected = ["pass" if a["passed"] else "fail" for a in answers]
    assert verdicts == expected, (verdicts, expected)
    assert page.locator(".check-rates .interval").count() == len(CONTESTANTS)
    assert page.locator(".check-rates-per-check tr[data-check]").count() >= len(DEFAULT_CHECKS) + 4
    screenshot(page, "suite-run-checks-desktop")
    page.set_viewport_size(PHONE)
    screenshot(page, "suite-run-checks-phone")
    page.set_viewport_size(DESKTOP)
    # The suite's page lists its checks in words.
    page.goto(live_app.url + f"suites/{created.json()['id']}/")
    assert "under 60 words: at most 60 words" in page.locator(".suite-default-checks").inner_text()
    screenshot(page, "suite-with-checks-desktop")
