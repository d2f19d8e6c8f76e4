"""The leaderboard as a reader sees it in Chromium at a desktop's and a phone's width, on verdicts
of every kind (tests/arena/leaderboard/board_subjects.py): it opens on all of them with each kind
named and counted, the ratings table's Rating column is in view without scrolling on a phone, the
grouped view puts variants under their family, and the page ends with what to pick. Screenshots
at both widths in the test artefacts."""

from __future__ import annotations

import pytest

from .artefacts import screenshot

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def subjects(live_app) -> None:
    live_app.manage("shell", "-c", "from tests.arena.leaderboard.board_subjects import seed; seed('admin')")



def test_every_kind_counted_rating_in_view_and_families(seen, live_app, subjects):
    width, page = seen
    page.goto(live_app.url + "leaderboard/?kind=all")
    line = page.locator("#source-line").inner_text()
    for kind in ("from comparisons", "from tournaments", "from anonymous battles", "from model judges"):
        assert kind in line, line
    assert "Shown: every kind." in line
    # The Rating column's cells lie inside the viewport, not behind the table's scroll.
    right = page.evaluate("() => Math.max(...[...document.querySelectorAll('#ratings td.rating')]"
                          ".map(td => td.getBoundingClientRect().right))")
    assert 0 < right <= page.viewport_size["width"], right
    assert page.locator("#decision li").count() >= 1
    screenshot(page, f"leaderboard-every-kind-{width}")
    page.locator("#decision").scroll_into_view_if_needed()
    screenshot(page, f"leaderboard-decision-{width}", full_page=False)
    page.goto(live_app.url + "leaderboard/?kind=all&group=family")
    assert page.locator("#ratings tbody.family").count() == 2
    assert page.locator("#ratings tbody.family .family-name").all_text_contents() != []
    right = page.evaluate("() => Math.max(...[...document.querySelectorAll('#ratings td.rating')]"
                          ".map(td => td.getBoundingClientRect().right))")
    assert 0 < right <= page.viewport_size["width"], right
    page.locator("#ratings").scroll_into_view_if_needed()
    screenshot(page, f"leaderboard-families-{width}", full_page=False)
