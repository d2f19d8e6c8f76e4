"""Few verdicts read honestly in Chromium at a desktop's and a phone's width
(tests/arena/leaderboard/ratings_subjects.py): one verdict, and nine ties among three models, show
intervals of positive width, rank ranges over more than one place, "not enough verdicts" in place
of a rank, and dashed, marked bars in the chart. Screenshots at both widths in the test artefacts."""

from __future__ import annotations

import re

import pytest

from .artefacts import screenshot

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
# kind, its tag (ratings_subjects.TAGS), models shown, their rank range
VIEWS = {"one-verdict": ("comparison", "few-verdicts-one", 2, "1st–2nd"),
         "nine-ties": ("tournament", "few-verdicts-ties", 3, "1st–3rd")}


@pytest.fixture(scope="module")
def subjects(live_app) -> None:
    live_app.manage("shell", "-c", "from tests.arena.leaderboard.ratings_subjects import seed; seed('admin')")



@pytest.mark.parametrize("view", list(VIEWS))
def test_few_verdicts_read_as_not_enough(seen, live_app, subjects, view):
    width, page = seen
    kind, tag, models, places = VIEWS[view]
    page.goto(live_app.url + f"leaderboard/?kind={kind}&tag={tag}")
    rows = page.locator("#ratings tbody tr[data-model]")
    assert rows.count() == models
    for i in range(models):
        row = rows.nth(i)
        assert row.locator("td.rank").inner_text() == "not enough verdicts"
        assert row.locator("td.rank-range").inner_text() == places
        low, high = map(int, re.findall(r"-?\d+", row.locator("td.interval").inner_text()))
        assert high - low > 100, (low, high)
    assert page.locator("#rating-chart g.bar.provisional").count() == models
    screenshot(page, f"ratings-{view}-{width}", full_page=False)
    page.locator("#ratings").scroll_into_view_if_needed()
    screenshot(page, f"ratings-{view}-table-{width}", full_page=False)
    page.locator("#rating-chart").scroll_into_view_if_needed()
    screenshot(page, f"ratings-{view}-chart-{width}", full_page=False)
