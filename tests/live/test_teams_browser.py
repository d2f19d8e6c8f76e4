"""A team in Chromium: a teammate (not staff) opens the lead's blind anonymous battle and judged
comparison read-only (whose it is said, no vote or stop control, no model name before the
lead's vote), the lead votes through the page and the names then show to the teammate too; a
member of another team gets the 404 page; History's "My team's" lists the lead's work, the
switcher shows the team. Photographed at 1280x900 and 390x844. The battles are written to the
running application's database (tests/arena/teams/team_subjects.py): no model runs."""

from __future__ import annotations

import json

import pytest

from .artefacts import DESKTOP, PHONE, screenshot

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def subjects(live_app) -> dict:
    out = live_app.manage("shell", "-c", "import json; from tests.arena.teams.team_subjects import seed; "
                                         "print(json.dumps(seed()))")
    return json.loads(out.splitlines()[-1])


def log_in(browser, live_app, username: str, path: str, viewport=DESKTOP):
    from tests.arena.teams.team_subjects import PASSWORD

    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.set_default_timeout(30_000)
    live_app.log_in_page(page, path, username=username, password=PASSWORD)
    return context, page


def test_a_teammate_watches_read_only_and_blind_until_the_leads_vote(browser, live_app, subjects):
    names = subjects["names"]
    battle = f"arena/{subjects['anonymous']}/"
    mate, page = log_in(browser, live_app, "teammate", battle)
    lead, lead_page = log_in(browser, live_app, "teamlead", battle)
    try:
        page.wait_for_selector("#read-only-note")
        text = page.text_content("main")
        assert "Read-only: teamlead's, in Search." in text and "Only its owner and staff change it." in text
        assert not any(name in page.content() for name in names)  # blind to the team as to its owner
        assert page.locator("#vote-buttons button:visible").count() == 0
        assert "Team: Search" in page.text_content("header")
        for name, size in (("desktop", DESKTOP), ("phone", PHONE)):
            page.set_viewport_size(size)
            screenshot(page, f"teams-anonymous-read-only-{name}")
        lead_page.wait_for_selector("#vote-buttons button[value=left]")
        assert lead_page.locator("#team-switch option:checked").text_content() == "Search"
        screenshot(lead_page, "teams-switcher-desktop", full_page=False)
        lead_page.set_viewport_size(PHONE)
        lead_page.click(".nav-menu > summary")
        screenshot(lead_page, "teams-switcher-phone", full_page=False)
        lead_page.click(".nav-menu > summary")
        lead_page.set_viewport_size(DESKTOP)
        with lead_page.expect_navigation():
            lead_page.click("#vote-buttons button[value=left]")
        page.reload()
        page.wait_for_selector("#verdict")
        assert "teamlead's verdict" in page.text_content("#verdict")
        assert all(name in page.text_content("main") for name in names)  # revealed by the lead's vote
        screenshot(page, "teams-anonymous-revealed-phone")
    finally:
        mate.close()
        lead.close()


def test_a_colleagues_comparison_and_the_teams_history(browser, live_app, subjects):
    mate, page = log_in(browser, live_app, "teammate", f"b/{subjects['comparison']}/")
    try:
        page.wait_for_selector("#read-only-note")
        assert "tmb-comment-41" in page.text_content("main")  # the lead's note, with the names
        assert page.locator("form[action$='/rerun'], form[action$='/vote'] button:visible").count() == 0
        screenshot(page, "teams-comparison-read-only-desktop")
        page.goto(live_app.url + f"suites/{subjects['suite']}/")
        assert "Read-only: teamlead's, in Search." in page.text_content("main")
        assert page.locator("#suite-run-this, #suite-rate-arena").count() == 0  # nothing they cannot use
        screenshot(page, "teams-suite-read-only-desktop")
        page.goto(live_app.url + "suites/?scope=team")
        assert "Lighthouse prompts" in page.text_content("main")
        page.set_viewport_size(PHONE)
        screenshot(page, "teams-suites-list-phone")
        page.set_viewport_size(DESKTOP)
        page.goto(live_app.url + "history/comparisons/?scope=team")
        assert "teamlead" in page.text_content("main") and "read-only" in page.text_content("main")
        for name, size in (("desktop", DESKTOP), ("phone", PHONE)):
            page.set_viewport_size(size)
            screenshot(page, f"teams-history-{name}")
    finally:
        mate.close()


def test_another_teams_member_gets_the_404_page(browser, live_app, subjects):
    stranger, page = log_in(browser, live_app, "stranger", "playground/")
    try:
        for path in (f"arena/{subjects['anonymous']}/", f"b/{subjects['comparison']}/"):
            response = page.goto(live_app.url + path)
            assert response.status == 404, path
            assert "tmb-comment-41" not in page.content()
    finally:
        stranger.close()
