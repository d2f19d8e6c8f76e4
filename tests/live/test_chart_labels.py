"""The leaderboard's and a suite run's charts as a reader sees them in Chromium, at a desktop's
and a phone's width: with verdicts between the eight default variants (written to the running
application's database, no model runs: tests/arena/leaderboard/chart_subjects.py), no two model
labels shown in a chart, the win-rate matrix or a chart's key are equal (names cut to ~20
characters made four SmolLM2 variants read "SmolLM2 135M Inst…"), a wrapped label's lines do not
run into the next row's, every axis is titled, and the text stays readable on a phone (the chart
scrolls in its own box rather than shrinking). Screenshots at both widths in the test artefacts."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest

from .artefacts import ARTEFACTS, WIDTHS, screenshot

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

# Each model label a chart shows, as rendered: an SVG label's lines joined, a table cell's text.
LABELS_JS = """(root) => {
  const svgLabels = [...root.querySelectorAll(
      'svg text:not(.tick):not(.axis-title):not(.dot-number):not(.provisional-mark)')]
    .map(t => [...t.querySelectorAll('tspan')].map(s => s.textContent).join(' ') || t.textContent);
  const cells = [...root.querySelectorAll('.chart-label')].filter(e => e.tagName !== 'text')
    .map(e => e.textContent.trim());
  return {svg: svgLabels, cells: cells};
}"""
# The boxes of the ratings chart's labels, to check a wrapped label stays within its own row.
BOXES_JS = """() => [...document.querySelectorAll('#rating-chart text.chart-label')].map(t => {
  const r = t.getBoundingClientRect(); return [r.top, r.bottom, r.height / t.querySelectorAll('tspan').length]; })"""


@pytest.fixture(scope="module")
def subjects(live_app) -> dict[str, str]:
    out = live_app.manage("shell", "-c", "import json; from tests.arena.leaderboard.chart_subjects import seed; "
                                         "print(json.dumps(seed('admin')))")
    return json.loads(out.splitlines()[-1])



def labels_in(page, selector: str) -> dict[str, list[str]]:
    return page.locator(selector).first.evaluate(LABELS_JS)


def assert_distinct(labels: list[str], at_least: int, where: str) -> None:
    assert len(labels) >= at_least, (where, labels)
    folded = [" ".join(label.split()).casefold() for label in labels]
    assert len(set(folded)) == len(folded), f"two labels alike in {where}: {labels}"
    assert not any("…" in label for label in labels), f"a label cut in {where}: {labels}"


def test_no_two_labels_alike_in_the_leaderboard_s_charts(seen, live_app, subjects):
    width, page = seen
    # Every verdict (the subjects' are named comparisons); the provisional marks under labels are
    # not model labels (the selector leaves them out), but the chart must say what they are.
    page.goto(live_app.url + "leaderboard/?kind=all")
    page.wait_for_selector("#rating-chart svg")
    ratings = labels_in(page, "#rating-chart")
    assert_distinct(ratings["svg"], 8, "the ratings chart")
    assert_distinct(labels_in(page, "#win-matrix thead")["cells"], 8, "the matrix's columns")
    assert_distinct(labels_in(page, "#win-matrix tbody")["cells"], 8, "the matrix's rows")
    assert_distinct(labels_in(page, "#ratings")["cells"], 8, "the ratings table")
    for key, unit in (("speed", "(tokens/s, median)"), ("first-token", "(s, median)"), ("memory", "(MB)")):
        assert_distinct(labels_in(page, f"#frontier-{key} .chart-key")["cells"], 8, f"the {key} chart's key")
        titles = page.locator(f"#frontier-{key} svg text.axis-title").all_text_contents()
        assert titles[1] == "Rating (Elo scale)" and titles[0].endswith(unit)
    assert "95% confidence interval" in page.locator("#rating-chart").inner_text()
    assert page.locator("#rating-chart text.axis-title").text_content().startswith("Rating (Bradley–Terry")
    boxes = page.evaluate(BOXES_JS)
    for (_top, bottom, _h), (top, _bottom, _h2) in pairwise(boxes):
        assert bottom <= top + 1, "a wrapped label runs into the next row's"
    assert min(line for *_box, line in boxes) >= 10, f"labels under 10 px tall on the {width}: unreadable"
    # Wide tables scroll in their own box; the page itself never scrolls sideways.
    assert page.evaluate("() => document.documentElement.scrollWidth") <= WIDTHS[width]["width"]
    screenshot(page, f"labels-leaderboard-{width}")
    page.locator("#rating-chart").screenshot(path=str(ARTEFACTS / "screenshots" / f"labels-rating-chart-{width}.png"))


def test_a_suite_run_s_charts_tell_its_alike_contestants_apart(seen, live_app, subjects):
    width, page = seen
    page.goto(live_app.url + f"suite-runs/{subjects['run']}/")
    page.wait_for_selector("#frontier-speed svg")
    for key in ("speed", "first-token", "memory"):
        assert_distinct(labels_in(page, f"#frontier-{key} .chart-key")["cells"], 4, f"the run's {key} key")
        numbers = page.locator(f"#frontier-{key} svg text.dot-number").all_text_contents()
        assert sorted(numbers) == ["1", "2", "3", "4"]
    page.locator("#suite-run-charts").scroll_into_view_if_needed()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= WIDTHS[width]["width"]
    screenshot(page, f"labels-suite-run-{width}")
