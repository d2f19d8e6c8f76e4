"""Issue 35's small list in a real headless Chromium against the running application, at a
desktop's and a phone's width (screenshots of each page in the test artefacts): a comparison
stopped part-way is judged ("both bad"), its buttons saying left/right side by side and which
answer is on top once stacked; an unvoted anonymous battle's buttons say "Model A is better" on a
phone, and History's anonymous tab lists it blind with a link back to judge it; each side's
speed chart has titled axes with ticks. The subjects are
written to the app's database (tests/live/small_list_subjects.py): no model runs."""

from __future__ import annotations

import json

import pytest

from arena.battles.voting import VOTE_AFTER_STOP

from .artefacts import screenshot

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def subjects(live_app) -> dict:
    out = live_app.manage("shell", "-c", "import json; from tests.live.small_list_subjects import seed; "
                                         "print(json.dumps(seed('admin')))")
    return json.loads(out.splitlines()[-1])



def shown_words(page, value: str) -> str:
    """The words a vote button shows now (its hidden span's words are not rendered)."""
    return page.locator(f'#vote-buttons button[value="{value}"]').inner_text().strip()


def test_a_stopped_comparison_is_judged_with_words_for_its_layout(seen, live_app, subjects):
    width, page = seen
    page.goto(live_app.url + f"b/{subjects['comparison']}/")
    assert page.locator("#left-status").get_attribute("data-state") == "cancelled"
    assert VOTE_AFTER_STOP in page.locator("#vote-note").inner_text()
    both_bad = page.locator('#vote-buttons button[value="both_bad"]')
    assert both_bad.is_enabled()
    if width == "desktop":
        assert (shown_words(page, "left"), shown_words(page, "right")) == ("← Left is better", "Right is better →")
    else:  # stacked: the left answer is the upper one
        top = page.locator('article[data-side="left"]').bounding_box()
        bottom = page.locator('article[data-side="right"]').bounding_box()
        assert top["y"] + top["height"] <= bottom["y"]
        assert (shown_words(page, "left"), shown_words(page, "right")) == ("↑ Top answer is better",
                                                                           "↓ Bottom answer is better")
    screenshot(page, f"small-list-stopped-comparison-{width}")
    both_bad.click()
    page.wait_for_selector('#verdict .voted[data-outcome="both_bad"]')
    assert "Both are bad" in page.locator("#verdict .voted").inner_text()
    screenshot(page, f"small-list-stopped-comparison-voted-{width}")


def test_history_lists_the_unvoted_anonymous_battle_blind_and_leads_back_to_judge_it(seen, live_app, subjects):
    width, page = seen
    page.goto(live_app.url + "history/anonymous/")
    row = page.locator(f'tr[data-id="{subjects["unvoted"]}"]')
    assert "Model A" in row.inner_text() and "Model B" in row.inner_text()
    assert not any(name in row.inner_text() for name in subjects["names"])
    assert page.locator(f'tr[data-id="{subjects["voted"]}"]').count() == 1
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")  # nothing off-screen
    screenshot(page, f"small-list-history-anonymous-{width}")
    row.locator("a.unvoted").click()
    page.wait_for_url(f"**/arena/{subjects['unvoted']}/")
    assert page.locator('#vote-buttons button[value="left"]').is_enabled()
    expected = ("← Left is better", "Right is better →") if width == "desktop" else ("↑ Model A is better",
                                                                                     "↓ Model B is better")
    assert (shown_words(page, "left"), shown_words(page, "right")) == expected
    screenshot(page, f"small-list-anonymous-unvoted-{width}")


def test_each_sides_speed_chart_has_titled_axes_with_ticks(seen, live_app):
    width, page = seen
    out = live_app.manage("shell", "-c", "from tests.live.small_list_subjects import seed_streamed; "
                                         "print(seed_streamed('admin'))")
    page.goto(live_app.url + f"b/{out.splitlines()[-1]}/")
    for side in ("left", "right"):
        chart = page.locator(f"#{side}-metrics svg.speed-chart")
        chart.wait_for()
        titles = chart.locator("text.axis-title").all_text_contents()
        assert titles == ["Seconds since the battle began", "Tokens"]
        assert len(chart.locator("text.tick").all_text_contents()) >= 4
    page.locator("#left-metrics").scroll_into_view_if_needed()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    screenshot(page, f"small-list-speed-charts-{width}", full_page=False)
