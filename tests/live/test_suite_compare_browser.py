"""Two runs of one suite compared, end to end on the running application with real packaged models:
a run of version 1, a new version imported (one prompt reworded), a run of version 2 with one
contestant replaced by another entry, then in headless Chromium the link from the later run's
page, the picker, the comparison page with the replaced contestant paired by hand, and the same
comparison from the API. Screenshots at 1280x900 and 390x844 (var/test-artefacts/screenshots/
suite-compare-*.png); axe-core finds nothing serious and the phone page does not scroll sideways."""

from __future__ import annotations

import re
import time

import pytest

from .artefacts import DESKTOP, PHONE, screenshot

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(900)]
FIRST = ["smollm2-135m", "smollm2-135m-llamacpp"]
SECOND = ["smollm2-135m", "gemma-3-270m-llamacpp"]  # gemma stands in for smollm2 on llama.cpp
DEFAULT_CHECKS = [{"type": "tokens", "min": 1, "name": "answers"},
                  {"type": "words", "max": 40, "name": "under 40 words"}]
PROMPTS = [
    {"prompt": "What is the capital of France? One word.",
     "checks": [{"type": "contains", "value": "paris", "ignore_case": True, "name": "names Paris"}]},
    {"prompt": "Name a primary colour.",
     "checks": [{"type": "contains", "value": ["red", "blue", "yellow"], "mode": "any", "ignore_case": True,
                 "name": "a primary colour"}]},
    {"prompt": "What is 2 + 2? Answer with a number.", "checks": [{"type": "number", "value": 4, "name": "four"}]},
]
REWORDED = "Name one primary colour, in one word."
STRICTER = {"type": "tokens", "max": 0, "name": "answers"}
SERIOUS = {"serious", "critical"}


def run_to_end(live_app, token, suite_id: str, contestants: list[str]) -> str:
    response = live_app.api(token, "post", "/api/v1/suite-runs", json={
        "suite": suite_id, "contestants": contestants, "params": {"temperature": 0, "max_new_tokens": 24}})
    assert response.status_code == 201, response.text
    run_id = response.json()["id"]
    deadline = time.time() + 360
    while time.time() < deadline:
        state = live_app.api(token, "get", f"/api/v1/suite-runs/{run_id}").json()
        if state["state"] != "running":
            assert state["state"] == "done", state
            return run_id
        time.sleep(1)
    raise AssertionError(f"run {run_id} did not end")


def serious(page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page).response
    return [f"{v['id']}: {v['help']} ({[n['target'] for n in v['nodes']][:3]})"
            for v in results["violations"] if v["impact"] in SERIOUS]


def test_a_run_compared_with_the_earlier_run_in_the_browser_and_the_api(live_app, page):
    token = live_app.token("admin")
    created = live_app.api(token, "post", "/api/v1/suites", json={
        "name": "Compared suite", "default_checks": DEFAULT_CHECKS, "prompts": PROMPTS})
    assert created.status_code == 201, created.text
    suite_id = created.json()["id"]
    earlier = run_to_end(live_app, token, suite_id, FIRST)
    version_2 = [PROMPTS[0], {**PROMPTS[1], "prompt": REWORDED}, PROMPTS[2]]
    # Version 2 redefines the check "answers" so that no answer can pass it: every matched answer
    # regresses (passed and now fails, or still fails with "answers" now failing), whatever the models say.
    imported = live_app.api(token, "put", f"/api/v1/suites/{suite_id}", json={
        "default_checks": [STRICTER, *DEFAULT_CHECKS[1:]], "prompts": version_2})
    assert imported.status_code == 200 and imported.json()["new_version"], imported.text
    later = run_to_end(live_app, token, suite_id, SECOND)

    # From the later run's page: the link, the picker, the comparison.
    live_app.log_in_page(page, f"suite-runs/{later}/")
    page.click("#run-compare-link")
    page.wait_for_url(f"**/suite-runs/{later}/compare/")
    screenshot(page, "suite-compare-pick-desktop")
    page.click(f'li[data-run="{earlier}"] a')
    page.wait_for_url(f"**/suite-runs/{later}/compare/{earlier}/")
    assert page.locator("#compare-unmatched-later").inner_text().count("Gemma") == 1
    # Pair gemma with the llama.cpp SmolLM2 it replaces.
    page.select_option("#pair-2", f"{SECOND[1]}:{FIRST[1]}")
    page.click(".compare-pair-form button[type=submit]")
    page.wait_for_url(re.compile(rf"/compare/{earlier}/\?pair="))
    assert page.locator("#compare-rates tbody tr").count() == 2
    assert page.locator("#compare-speeds tbody tr").count() == 4
    assert "2 matched prompts" in page.locator("#compare-verdict").inner_text()
    assert REWORDED in page.locator("#compare-only-later").text_content()
    assert "matched by their text" in page.locator("#compare-matching").inner_text()
    assert not page.locator("#compare-unmatched-later").count()

    api = live_app.api(token, "get", f"/api/v1/suite-runs/{later}/compare/{earlier}",
                       params={"pair": f"{SECOND[1]}:{FIRST[1]}"})
    assert api.status_code == 200, api.text
    body = api.json()
    shown = page.locator("#compare-verdict").get_attribute("data-regressions")
    assert int(shown) == body["regressions"]
    assert body["prompts"]["matched"] == 2 and len(body["changes"]) == 4
    for rate in body["pass_rates"]["pairs"]:
        assert rate["prompts"] == 2 and rate["before"]["total"] == rate["after"]["total"] == 2
    speeds = [s for s in body["speeds"]["pairs"] if s["measure"] == "tokens_per_s"]
    assert all(s["before"]["n"] == 3 and s["after"]["n"] == 3 and s["ratio"] > 0 for s in speeds), speeds
    assert body["regressions"] == 4 and {c["kind"] for c in body["changes"]} <= {"regressed", "check_regressed"}
    assert all(c["checks_changed"] for c in body["changes"])
    assert page.locator("#compare-changes li.compare-change").count() == 4
    assert page.locator("#compare-changes li.compare-change", has_text="the check changed").count() == 4

    screenshot(page, "suite-compare-desktop")
    assert not serious(page)
    page.set_viewport_size(PHONE)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot(page, "suite-compare-phone")
    assert not serious(page)
    page.set_viewport_size(DESKTOP)

    # And from the earlier run's page, the same comparison (the later run first).
    page.goto(live_app.url + f"suite-runs/{earlier}/compare/")
    assert page.locator(f'li[data-run="{later}"] a').get_attribute("href") == \
        f"/suite-runs/{later}/compare/{earlier}/"
    page.set_viewport_size(PHONE)
    screenshot(page, "suite-compare-pick-phone")
    page.set_viewport_size(DESKTOP)
