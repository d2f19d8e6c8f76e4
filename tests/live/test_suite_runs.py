"""A suite run end to end on the running application: a real 3-contestant x 4-prompt round robin
judged by a packaged model, started through the API, watched in headless Chromium (the progress
bar, and at the end, without a reload, the answers, judged pairs and controls swapped in), with
the Celery worker SIGKILLed mid-run. The run resumes by itself (the orchestrator's
loop restarts its steps; the sweeper fails what the killed worker followed, and the runner tries
that again), and at the end every answer and every judgement is stored exactly once."""

from __future__ import annotations

import json
import time

import pytest

from harness.app import launcher_child

from .artefacts import DESKTOP, PHONE, screenshot

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.timeout(900)]
CONTESTANTS = ["smollm2-135m", "smollm2-135m-llamacpp", "gemma-3-270m-llamacpp"]
JUDGE = "smollm2-135m"
PROMPTS = [
    {"prompt": "What is the capital of France? One word."},
    {"prompt": "Name a primary colour.", "reference": "Red, yellow or blue."},
    {"prompt": "Give a JSON object with a key 'city' naming a city.",
     "json_schema": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}},
                     "required": ["city"], "additionalProperties": False}},
    {"prompt": "Write a lowercase word.", "regex": "[a-z]{1,12}"},
]
PAIRS = 3  # round robin of 3


@pytest.fixture(scope="module")
def token(live_app):
    return live_app.token("admin")


def run_state(live_app, token, run_id: str) -> dict:
    response = live_app.api(token, "get", f"/api/v1/suite-runs/{run_id}")
    assert response.status_code == 200, response.text
    return response.json()


def stored(live_app, run_id: str) -> dict:
    """What the database holds for the run: generations per answer and judgement, and battles."""
    code = (
        "import json; from arena.suites.models import *; from arena.suite_runs.models import *; "
        "from arena.battles.models import Battle; "
        "from arena.generations.models import Generation as G; "
        f"run = SuiteRun.objects.get(id={run_id!r}); "
        "answers = list(SuiteAnswer.objects.filter(run=run).select_related('generation')); "
        "judgements = list(SuiteJudgement.objects.filter(run=run).select_related('generation')); "
        # This run's (other modules of the shared app write suite answers of their own, earlier).
        "suite_gens = G.objects.filter(origin='suite', owner=run.owner, created_at__gte=run.created_at); "
        "print(json.dumps({'answers': [[a.prompt_id, a.contestant_id, a.generation.status, a.attempts, "
        "a.generation.output_valid] for a in answers], "
        "'judgements': [[j.prompt_id, j.left_id, j.right_id, j.order, j.generation.status] for j in judgements], "
        "'done_generations': suite_gens.filter(status='done').count(), "
        "'failed_generations': suite_gens.filter(status='failed').count(), "
        "'battles': list(run.verdicts().values_list('left_id', 'right_id', 'outcome'))}, default=str))"
    )
    return json.loads(live_app.manage("shell", "-c", code).splitlines()[-1])


def progress_in_page(page) -> tuple[int, int]:
    bar = page.locator("#suite-run-progress")
    return int(bar.get_attribute("data-done")), int(bar.get_attribute("data-total"))


def test_a_judged_round_robin_survives_a_celery_kill_and_stores_everything_once(live_app, token, page):
    created = live_app.api(token, "post", "/api/v1/suites", json={"name": "Live suite", "tag": "live-suite",
                                                                  "prompts": PROMPTS})
    assert created.status_code == 201, created.text
    response = live_app.api(token, "post", "/api/v1/suite-runs", json={
        "suite": created.json()["id"], "contestants": CONTESTANTS, "format": "round_robin", "judge": JUDGE,
        "params": {"temperature": 0.7, "max_new_tokens": 24}})
    assert response.status_code == 201, response.text
    run_id = response.json()["id"]

    live_app.log_in_page(page, f"suite-runs/{run_id}/")
    seen = [progress_in_page(page)]
    killed_at = None
    deadline = time.time() + 780
    while time.time() < deadline:
        state = run_state(live_app, token, run_id)
        if killed_at is None and state["progress"]["done"] >= 3:
            launcher_child(live_app, "celery").kill()  # SIGKILL mid-run: its steps and followers die with it
            killed_at = time.time()
            print(f"\nCelery SIGKILLed at {state['progress']['done']}/{state['progress']['total']}")
        if state["state"] != "running":
            break
        page.wait_for_timeout(2000)
        seen.append(progress_in_page(page))
    else:
        raise AssertionError(f"the run did not finish: {state}")
    print(f"run ended {state['state']} {time.time() - killed_at:.0f} s after the kill; page saw {seen}")
    assert state["state"] == "done", state
    total = len(PROMPTS) * len(CONTESTANTS) + 2 * PAIRS * len(PROMPTS)
    assert state["progress"]["done"] == state["progress"]["total"] == total

    # The page followed the run by itself, never going backwards, and shows the end.
    page.wait_for_function("document.querySelector('#suite-run-progress').dataset.done"
                           f" == '{total}'", timeout=10_000)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert len({done for done, _ in seen}) > 2  # it moved while the run ran

    # Without a reload, the page swapped in the end of the run: every answer's final status,
    # every judged pair with the judge's self-agreement, the charts, and no Cancel any more.
    page.wait_for_selector('#suite-run-progress[data-state="done"]', timeout=15_000)
    # The charts, or (a 135M judge often reads positions: judges are checked before they count)
    # the sentence saying why there are none; either way the section is swapped in.
    page.wait_for_selector("#suite-run-charts figure, #charts-left-out", state="attached", timeout=15_000)
    statuses = page.eval_on_selector_all(".suite-answer", "els => els.map(e => e.dataset.status)")
    assert statuses == ["done"] * len(PROMPTS) * len(CONTESTANTS), statuses
    assert page.locator("#suite-run-verdict-list > .judged-pair").count() == PAIRS * len(PROMPTS)
    assert page.locator(".judge-agreement").inner_text().startswith("Judge agreed with itself on ")
    assert page.locator("#suite-run-cancel").count() == 0
    assert page.locator("#suite-run-controls .exports").is_visible()
    screenshot(page, "suite-run-finished-desktop")
    page.set_viewport_size(PHONE)
    screenshot(page, "suite-run-finished-phone")
    page.set_viewport_size(DESKTOP)
    # The run is listed, with its state, on its suite's page and in History's suite runs.
    for path in (f"suites/{created.json()['id']}/", "history/suite-runs/"):
        page.goto(live_app.url + path)
        page.wait_for_selector(f'a[href="/suite-runs/{run_id}/"]')
        assert "done" in page.locator(f'[data-run="{run_id}"], tr[data-id="{run_id}"]').first.inner_text()
    screenshot(page, "history-suite-runs-desktop")

    db = stored(live_app, run_id)
    # Every answer and every judgement exactly once, each from a generation that finished; a
    # generation the kill cut short was failed and tried again, never duplicated.
    assert len(db["answers"]) == len(PROMPTS) * len(CONTESTANTS)
    assert len({(p, c) for p, c, *_ in db["answers"]}) == len(db["answers"])
    assert all(status == "done" for _, _, status, _, _ in db["answers"]), db["answers"]
    assert len(db["judgements"]) == 2 * PAIRS * len(PROMPTS)
    assert all(status == "done" for *_, status in db["judgements"]), db["judgements"]
    assert db["done_generations"] == len(db["answers"]) + len(db["judgements"])
    assert len(db["battles"]) == PAIRS * len(PROMPTS)
    assert len({(left, right) for left, right, _ in db["battles"]}) == len(db["battles"])
    retried = [a for a in db["answers"] if a[3] > 1] + [j for j in db["judgements"] if j[-1] != "done"]
    print(f"failed generations (the kill's, tried again): {db['failed_generations']}; answers retried: {retried}")

    # Constrained decoding held for every contestant on both constrained prompts.
    validity = [valid for *_, valid in db["answers"] if valid is not None]
    assert len(validity) == 2 * len(CONTESTANTS) and all(validity)

    results = {row["model"]: row for row in state["results"]}
    assert set(results) == set(CONTESTANTS)
    for row in results.values():
        assert row["answered"] == len(PROMPTS) and row["failed"] == 0
        assert row["wins"] + row["losses"] + row["ties"] == (len(CONTESTANTS) - 1) * len(PROMPTS)
        assert row["validity_rate"] == 1.0
