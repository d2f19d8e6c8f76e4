"""The leaderboard by kind of prompt in Chromium at a desktop's and a phone's width, on seeded
verdicts whose answer is known (tests/arena/leaderboard/category_subjects.py: model A wins every
coding prompt, model B every support prompt): the per-category table names each one's winner with
an interval, and "prompts like this one" ranks them on a pasted coding prompt, saying which
similarity it used. The seeded categories and verdicts are removed afterwards (this application is
shared with other modules, and a category with no rule matching would queue classifier answers)."""

from __future__ import annotations

import json

import pytest

from .artefacts import screenshot

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

OWNER = "categories-subject"


@pytest.fixture(scope="module")
def subjects(live_app):
    live_app.user(OWNER)
    out = live_app.manage("shell", "-c", "import json; from tests.arena.leaderboard.category_subjects import seed; "
                                          f"print(json.dumps(seed({OWNER!r})))")
    yield json.loads(out.splitlines()[-1])
    live_app.manage("shell", "-c", f"from tests.arena.leaderboard.category_subjects import unseed; unseed({OWNER!r})")


def test_the_table_by_category_and_prompts_like_this_one(seen, live_app, subjects):
    width, page = seen
    page.goto(live_app.url + "leaderboard/")
    table = page.locator("#category-table")
    table.scroll_into_view_if_needed()
    assert table.locator('[data-category="coding"]').count() >= 1
    overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, overflow  # the page never scrolls sideways; the table scrolls in its box
    screenshot(page, f"leaderboard-categories-{width}", full_page=False)
    page.goto(live_app.url + "leaderboard/like/")
    page.fill("#like-prompt", "Write a Python function that sorts a list of numbers")
    page.locator("#like-form button[type=submit]").click()
    page.wait_for_selector("#like-table")
    ranked = page.locator("#like-table tbody tr").evaluate_all("rows => rows.map(r => r.dataset.model)")
    assert ranked[0] == subjects["a"], ranked  # the coding prompts' winner first
    assert "chrF" in page.content()
    screenshot(page, f"leaderboard-like-{width}")


def test_the_categories_page_lists_the_rules(seen, live_app, subjects):
    width, page = seen
    page.goto(live_app.url + "categories/")
    assert page.get_by_text("support replies").count() >= 1
    overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, overflow
    screenshot(page, f"categories-{width}")
