"""A suite run's pass matrix in Chromium, at a desktop's and a phone's width, on a run of 60 prompts
by 4 contestants written to the running application's database (no model runs:
harness/suite_matrix.py): every cell's state, the failing checks named, filtering by tag and
"failing only" through the form, the pages, the answer one click away; then the run page's Checks
section (pass rates per contestant, check and tag, the cost beside them) and its re-check button.
Screenshots at both widths in the test artefacts."""

from __future__ import annotations

import json

import pytest

from .artefacts import ARTEFACTS, WIDTHS, screenshot

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
PROMPTS, CONTESTANTS = 60, 4


def seeded_run(live_app) -> str:
    out = live_app.manage("shell", "-c", "from harness.suite_matrix import seed_for; "
                                         f"print(seed_for('admin', {PROMPTS}, {CONTESTANTS}))")
    return out.splitlines()[-1].strip()


@pytest.fixture(scope="module")
def run_id(live_app) -> str:
    """A run the matrix tests only read: its seeded results stay as seeded."""
    return seeded_run(live_app)


@pytest.fixture
def run_to_recheck(live_app) -> str:
    """A run of its own for each re-check: a re-check replaces the seeded results with the real
    checks' (every answer passes), which the matrix test, in whatever order it runs, must not see."""
    return seeded_run(live_app)


def states(page) -> list[list[str]]:
    return page.eval_on_selector_all(
        "#pass-matrix tbody tr", "rows => rows.map(r => [...r.querySelectorAll('td')].map(c => c.dataset.state))")


def test_the_pass_matrix_shows_filters_and_pages_the_answers(seen, live_app, run_id):
    width, page = seen
    token = live_app.token("admin")
    answers = live_app.api(token, "get", f"/api/v1/suite-runs/{run_id}/answers").json()["answers"]
    assert len(answers) == PROMPTS * CONTESTANTS
    expected = {(a["prompt_position"], a["contestant"]): a for a in answers}

    page.goto(live_app.url + f"suite-runs/{run_id}/matrix")
    shown = states(page)
    assert len(shown) == 50 and all(len(row) == CONTESTANTS for row in shown)  # the first page of prompts
    slugs = page.eval_on_selector_all("#pass-matrix thead th[data-model]", "ths => ths.map(t => t.dataset.model)")
    for position, row in enumerate(shown, start=1):
        for slug, state in zip(slugs, row, strict=True):
            answer = expected[(position, slug)]
            wanted = {"failed": "failed", "done": {True: "pass", False: "fail"}.get(answer["passed"], "no-checks")}
            assert state == wanted[answer["status"]], (position, slug, answer)
    failing = page.locator('td[data-state="fail"]').first
    assert "mentions refund" in failing.inner_text()
    assert "expected contains" in failing.get_attribute("title")
    assert "Page 1 of 2" in page.locator(".pagination").inner_text()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= WIDTHS[width]["width"]
    screenshot(page, f"pass-matrix-{width}")

    # failing only, through the form
    page.check("input[name=failing]")
    page.click("#matrix-filters button[type=submit]")
    page.wait_for_url("**failing=1**")
    failing_rows = states(page)
    assert failing_rows and all(any(s in ("fail", "failed") for s in row) for row in failing_rows)
    screenshot(page, f"pass-matrix-failing-{width}")

    # a tag, failing only still on
    page.select_option("#matrix-tag", "legal")
    page.click("#matrix-filters button[type=submit]")
    page.wait_for_url("**tag=legal**")
    counts = page.locator("#matrix-counts").inner_text()
    assert "tagged legal, with an answer that failed its checks" in counts

    # the pages, then the answer one click away
    page.goto(live_app.url + f"suite-runs/{run_id}/matrix")
    page.click(".pagination a[rel=next]")
    page.wait_for_url("**page=2**")
    assert len(states(page)) == PROMPTS - 50
    page.locator('#pass-matrix td[data-state="pass"] a').first.click()
    page.wait_for_url("**/g/**")
    assert "within 30 days for a refund" in page.content()


def test_the_run_page_shows_rates_per_tag_the_cost_and_rechecks(seen, live_app, run_to_recheck):
    width, page = seen
    run_id = run_to_recheck
    page.goto(live_app.url + f"suite-runs/{run_id}/")
    section = page.locator("#suite-run-checks")
    assert section.locator(".check-rates-per-tag tr[data-tag]").count() == 5
    costs = section.locator(".check-rates td.cost").all_inner_texts()
    assert costs[0].startswith("$") and "no price" in costs  # priced per token, per hour; unpriced
    assert page.evaluate("() => document.documentElement.scrollWidth") <= WIDTHS[width]["width"]
    screenshot(page, f"pass-rates-run-page-{width}")
    section.screenshot(path=str(ARTEFACTS / "screenshots" / f"pass-rates-checks-section-{width}.png"))

    token = live_app.token("admin")
    before = live_app.api(token, "get", f"/api/v1/suite-runs/{run_id}").json()["checks"]
    with page.expect_navigation():
        page.click("#suite-run-recheck")
    after = live_app.api(token, "get", f"/api/v1/suite-runs/{run_id}").json()["checks"]
    assert after["checked_at"] > before["checked_at"]
    # the seeded results said a tenth failed; the real checks read every answer, which all mention
    # a refund and name the window: every checked answer passes now, and nothing was generated
    assert all(row["passed"] == row["total"] for row in after["contestants"]), json.dumps(after)[:2000]
    answers = live_app.api(token, "get", f"/api/v1/suite-runs/{run_id}/answers").json()["answers"]
    assert len(answers) == PROMPTS * CONTESTANTS
