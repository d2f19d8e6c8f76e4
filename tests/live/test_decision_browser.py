"""What to pick, as a reader sees it in Chromium at a desktop's and a phone's width (issue 35): a
finished suite run's page and a revealed tournament's end with the decision summary, no single best
named from their few verdicts, and the page never scrolls sideways. Screenshots in the artefacts."""

from __future__ import annotations

import json

import pytest

from .artefacts import ARTEFACTS, WIDTHS, screenshot

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def subjects(live_app) -> dict[str, str]:
    out = live_app.manage("shell", "-c", "import json; from tests.arena.decision_subjects import seed; "
                                         "print(json.dumps(seed('admin')))")
    return json.loads(out.splitlines()[-1])


def look(page, width: str, name: str) -> str:
    section = page.locator("#decision")
    section.scroll_into_view_if_needed()
    words = section.inner_text()
    assert words.startswith("What to pick") and "is the best in this view" not in words, words
    assert page.evaluate("() => document.documentElement.scrollWidth") <= WIDTHS[width]["width"]
    box = section.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= WIDTHS[width]["width"], box
    screenshot(page, f"{name}-{width}")
    section.screenshot(path=str(ARTEFACTS / "screenshots" / f"{name}-section-{width}.png"))
    return words


def test_a_finished_suite_run_ends_with_what_to_pick(seen, live_app, subjects):
    width, page = seen
    page.goto(live_app.url + f"suite-runs/{subjects['run']}/")
    page.wait_for_selector("#decision")
    words = look(page, width, "decision-suite-run")
    assert "cannot be told apart from the best" in words and "Provisional:" in words


def test_a_revealed_tournament_ends_with_what_to_pick(seen, live_app, subjects):
    width, page = seen
    page.goto(live_app.url + f"tournaments/{subjects['tournament']}/")
    page.wait_for_selector("#decision")
    words = look(page, width, "decision-tournament")
    assert words.splitlines()[1].startswith("One bracket: 3 verdicts, each entry met at most 2 others: ")
