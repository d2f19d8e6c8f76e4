"""Raters by link in Chromium (issue 38): the owner makes a link on a people-judged run's page,
a rater opens it in a fresh context (no login) at a phone's width and judges three pairs blind,
never seeing a model's name, and the owner's run page counts them. Screenshots in the artefacts."""

from __future__ import annotations

import json

import pytest

from .artefacts import DESKTOP, PHONE, WIDTHS, screenshot

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def subjects(live_app) -> dict:
    out = live_app.manage("shell", "-c", "import json; from tests.arena.raters.rater_subjects import seed; "
                                         "print(json.dumps(seed('admin')))")
    return json.loads(out.splitlines()[-1])


def test_a_rater_judges_three_pairs_by_link_and_the_owner_sees_them(browser, live_app, subjects):
    run_url = live_app.url + f"suite-runs/{subjects['run']}/"
    owner_ctx = browser.new_context(viewport=DESKTOP)
    owner = owner_ctx.new_page()
    live_app.log_in_page(owner)
    owner.goto(run_url)
    owner.fill("#id_name", "Support lead")
    owner.fill("#id_cap", "5")
    owner.click("#rater-link-create")
    owner.wait_for_selector(".rater-new-url input")
    link = owner.input_value(".rater-new-url input")
    assert "/rate/" in link
    owner.locator("#raters").scroll_into_view_if_needed()
    screenshot(owner, "rater-link-made-desktop", full_page=False)

    rater_ctx = browser.new_context(viewport=PHONE)  # fresh: no login, no cookie of the owner's
    rater = rater_ctx.new_page()
    rater.goto(link)
    for n in range(3):
        rater.wait_for_selector("#rater-pair")
        words = rater.content()
        for name in subjects["names"]:
            assert name not in words, name
        assert rater.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
        if n == 0:
            screenshot(rater, "rater-page-phone")
        with rater.expect_navigation():
            rater.click("#rater-pair button[value=a]" if n % 2 == 0 else "#rater-pair button[value=tie]")
    with rater.expect_navigation():
        rater.click("#rater-finish")
    rater.wait_for_selector("#rater-over")
    assert "you gave 3 verdicts" in rater.inner_text("#rater-over")
    for name in subjects["names"]:
        assert name not in rater.content(), name
    screenshot(rater, "rater-done-phone")
    rater_ctx.close()

    for width, size in WIDTHS.items():
        ctx = owner_ctx if width == "desktop" else browser.new_context(viewport=size)
        page = owner if width == "desktop" else ctx.new_page()
        if width != "desktop":
            live_app.log_in_page(page)
        page.goto(run_url)
        row = page.locator("#raters tr", has_text="Support lead")
        assert "3 of at most 5" in row.inner_text() and "rater finished" in row.inner_text()
        assert "needs verdicts from two raters" in page.inner_text("#rater-agreement")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= size["width"]
        page.locator("#raters").scroll_into_view_if_needed()
        screenshot(page, f"rater-links-owner-{width}", full_page=False)
        if width != "desktop":
            ctx.close()
    owner_ctx.close()
