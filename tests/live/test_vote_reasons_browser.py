"""Voting with a reason in Chromium at a phone's width: the reason tags are reached and ticked
with the keyboard, a hostile comment is typed, ticking and typing do not move the vote buttons,
the vote stores the note, and the page shows it as text. The anonymous battle's form, its revealed
note and the leaderboard's "why it won, why it lost" are photographed at both widths. The battles
are written to the running application's database (tests/arena/battles/reason_subjects.py): no
model runs."""

from __future__ import annotations

import json

import pytest

from .artefacts import DESKTOP, PHONE, screenshot

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.timeout(300)]
HOSTILE = '<img src=x onerror="window.rsnPwned=1">rsn-live-5b2 <b>bold?</b>'


@pytest.fixture(scope="module")
def subjects(live_app) -> dict[str, str]:
    out = live_app.manage("shell", "-c", "import json; from tests.arena.battles.reason_subjects import seed; "
                                         "print(json.dumps(seed('admin')))")
    return json.loads(out.splitlines()[-1])


def stored(live_app, battle_id: str) -> dict:
    out = live_app.manage("shell", "-c", "import json; from tests.arena.battles.reason_subjects import stored; "
                                         f"print(json.dumps(stored({battle_id!r})))")
    return json.loads(out.splitlines()[-1])


def button_box(page, value: str) -> list[int]:
    """Where the button sits on the page (not in the viewport, which scrolls as one types)."""
    return page.locator(f"#vote-buttons button[value={value}]").evaluate(
        "b => { const r = b.getBoundingClientRect(); "
        "return [Math.round(r.left + scrollX), Math.round(r.top + scrollY)]; }")


def test_a_vote_with_reasons_on_a_phone(browser, live_app, subjects):
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        live_app.log_in_page(page, f"b/{subjects['comparison']}/")
        page.wait_for_selector("#vote-why")
        screenshot(page, "reasons-comparison-phone")
        before = button_box(page, "left")
        # The keyboard alone: focus the first reason, move to the second, tick it with Space.
        page.focus("#vote-why input[value=factual_error]")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.value") == "too_long"
        page.keyboard.press("Space")
        assert page.is_checked("#vote-why input[value=too_long]")
        page.focus("#id_comment")
        page.keyboard.type(HOSTILE)
        assert button_box(page, "left") == before  # ticking and typing moved no vote button
        assert page.locator("#vote-buttons button[value=left] .when-stacked").is_visible()  # the phone's words
        with page.expect_response(lambda r: "/vote" in r.url):
            page.click("#vote-buttons button[value=left]")
        page.wait_for_selector(".voted .vote-note")
        assert stored(live_app, subjects["comparison"]) == {
            "outcome": "left", "reasons": ["too_long"], "comment": HOSTILE, "revealed": False}
        note = page.text_content(".voted .vote-note")
        assert "too long" in note and HOSTILE in note  # shown as text, never as markup
        assert page.evaluate("window.rsnPwned") is None and page.locator(".voted .vote-note img").count() == 0
        assert page.is_checked("#vote-why input[value=too_long]")  # the form keeps the stored note
        screenshot(page, "reasons-comparison-voted-phone")
        page.set_viewport_size(DESKTOP)
        screenshot(page, "reasons-comparison-voted-desktop")
    finally:
        context.close()


def test_the_anonymous_form_its_revealed_note_and_the_leaderboard_at_both_widths(browser, live_app, subjects):
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        live_app.log_in_page(page, f"arena/{subjects['anonymous']}/")
        page.wait_for_selector("#vote-why")
        for name, size in (("desktop", DESKTOP), ("phone", PHONE)):
            page.set_viewport_size(size)
            screenshot(page, f"reasons-anonymous-form-{name}")
        page.check("#vote-why input[value=off_topic]")
        page.fill("#id_comment", "rsn-live-anon both drifted")
        with page.expect_navigation():
            page.click("#vote-buttons button[value=both_bad]")
        page.wait_for_selector("#verdict .vote-note")
        assert "rsn-live-anon both drifted" in page.text_content("#verdict")
        for name, size in (("desktop", DESKTOP), ("phone", PHONE)):
            page.set_viewport_size(size)
            screenshot(page, f"reasons-anonymous-revealed-{name}")
        page.goto(live_app.url + "leaderboard/?kind=all")
        page.wait_for_selector("#why")
        assert "clearer" in page.text_content("#why") and "off topic" in page.text_content("#why")
        for name, size in (("desktop", DESKTOP), ("phone", PHONE)):
            page.set_viewport_size(size)
            page.locator("#why-heading").scroll_into_view_if_needed()
            screenshot(page, f"reasons-leaderboard-{name}", full_page=False)
        page.goto(live_app.url + "history/comparisons/")
        for name, size in (("desktop", DESKTOP), ("phone", PHONE)):
            page.set_viewport_size(size)
            screenshot(page, f"reasons-history-{name}")
    finally:
        context.close()
