"""Every main page as the admin meets it, at a desktop's and a phone's width, in the tests' Chromium:
axe-core (the copy axe-playwright-python bundles: nothing is downloaded) finds no serious or critical
accessibility problem; on a phone the navigation waits behind "Menu", no page scrolls sideways (wide
tables and the bracket scroll inside their own box) and a streaming answer is brought into view.
Screenshots of every page at both widths are left in the test artefacts (tests/live/artefacts.py).

Each page's subject is made once, cheaply, through the API: a generation, a comparison, a whole
4-contestant tournament to its reveal and a suite run, all on llama.cpp entries with 8 new tokens."""

from __future__ import annotations

import time

import pytest

from .artefacts import DESKTOP, PHONE, screenshot
from .tournament import current, sides_done, wait_state

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

FAST = "smollm2-135m-llamacpp"
# One Gemma entry only: its GGUF is joined from chunks on first load, by one worker at a time.
CONTESTANTS = [FAST, "gemma-3-270m-llamacpp", "smollm2-135m-llamacpp-spec", "smollm2-135m"]
SHORT = {"temperature": 0, "max_new_tokens": 8}
SERIOUS = ("serious", "critical")


@pytest.fixture(scope="module")
def subjects(live_app):
    pages = make_subjects(live_app)
    yield pages
    # The tournament left mid-match stops, so it holds no worker for the modules after this one.
    session = live_app.login()
    url = live_app.url + pages["tournament-match"]
    session.get(url, timeout=10)
    stopped = session.post(url + "stop", headers={"X-CSRFToken": session.cookies["csrftoken"], "Referer": url},
                           timeout=10)
    assert stopped.status_code in (200, 302), stopped.status_code


def make_subjects(live_app) -> dict[str, str]:
    """The pages to visit as the admin, by name: their subjects made through the API."""
    token = live_app.token("admin")

    def post(path: str, body: dict) -> dict:
        response = live_app.api(token, "post", path, json=body)
        assert response.status_code in (201, 202), response.text
        return response.json()

    gen = post("/api/v1/generations", {"model": FAST, "prompt": "Name a colour.", "params": {**SHORT, "seed": 7}})
    battle = post("/api/v1/comparisons", {"left_model": FAST, "right_model": CONTESTANTS[1],
                                          "prompt": "Name a fruit.", "params": SHORT})
    suite = post("/api/v1/suites", {"name": "Pages suite", "prompts": [{"prompt": "Name a city."}]})
    run = post("/api/v1/suite-runs", {"suite": suite["id"], "contestants": CONTESTANTS[:2], "params": SHORT})
    blind = {"contestants": CONTESTANTS, "seeding": "given", "prompt": "Name an animal.",
             "params": {**SHORT, "temperature": 0.7}}  # a tournament refuses greedy answers
    tournament = post("/api/v1/tournaments", blind)
    # The tournament to its reveal (bracket and reveal table are the widest things on a phone).
    for _ in range(3):
        body = wait_state(live_app, token, tournament["id"], lambda b: b["state"] == "finished" or (
            b["current_match"] is not None and sides_done(b)), timeout=300, what="a match answered")
        if body["state"] == "finished":
            break
        match = current(body)
        deadline = time.time() + 120
        # Refused (409) until the blind pace has shown both answers to their end.
        while (picked := live_app.api(token, "post", f"/api/v1/tournaments/{tournament['id']}/winner", json={
                "match": match["id"], "winner": "left", "battle": match["battle"]["id"]})).status_code == 409:
            assert time.time() < deadline, picked.text
            time.sleep(0.5)
        assert picked.status_code == 200, picked.text
    wait_state(live_app, token, tournament["id"], lambda b: b["state"] == "finished", timeout=60, what="the reveal")
    # Another, left at its first match with both answers in: the page a user judges on.
    judging = post("/api/v1/tournaments", blind)
    wait_state(live_app, token, judging["id"], sides_done, timeout=300, what="its first match answered")
    live_app.wait_generation(token, gen["id"])
    deadline = time.time() + 300
    while live_app.api(token, "get", f"/api/v1/suite-runs/{run['id']}").json()["state"] == "running":
        assert time.time() < deadline, "the suite run never ended"
        time.sleep(0.5)
    return {
        "playground": "playground/", "generation": f"g/{gen['id']}/",
        "compare": "compare/", "battle": f"b/{battle['id']}/",
        "tournaments": "tournaments/", "tournament-new": "tournaments/new/",
        "tournament": f"tournaments/{tournament['id']}/", "tournament-match": f"tournaments/{judging['id']}/",
        "suites": "suites/", "suite": f"suites/{suite['id']}/",
        "suite-runs": "suite-runs/", "suite-run": f"suite-runs/{run['id']}/",
        "history": "history/", "leaderboard": "leaderboard/", "status": "status/", "tokens": "account/tokens/",
        "invitations": "accounts/invitations/", "password-change": "accounts/password_change/",
        "not-found": "no-page-lives-at-this-address/",
    }


# What a visitor who is not logged in sees.
ANONYMOUS = {"login": "accounts/login/", "admin-login": "admin/login/", "password-reset": "accounts/password_reset/"}


def _context(browser, live_app, viewport: dict, log_in: bool):
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.set_default_timeout(30_000)
    if log_in:
        live_app.log_in_page(page)
    return context, page


def _visit(page, url: str) -> int:
    response = page.goto(url, wait_until="load")
    assert response is not None, url
    return response.status


def _serious(page) -> list[str]:
    """axe-core's serious and critical violations on the page, one line each with its elements."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page).response
    return [f"{v['id']} ({v['impact']}): {v['help']} -> " + "; ".join(" ".join(n["target"]) for n in v["nodes"][:6])
            for v in results["violations"] if v["impact"] in SERIOUS]


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_every_page_passes_axe_core(browser, live_app, subjects, width):
    viewport = DESKTOP if width == "desktop" else PHONE
    found: dict[str, list[str]] = {}
    for log_in, pages in ((True, subjects), (False, ANONYMOUS)):
        context, page = _context(browser, live_app, viewport, log_in)
        try:
            for name, path in pages.items():
                if (status := _visit(page, live_app.url + path)) >= 500:
                    found[name] = [f"HTTP {status}"]
                    continue
                screenshot(page, f"pages-{name}-{width}")
                if problems := _serious(page):
                    found[name] = problems
        finally:
            context.close()
    assert not found, "axe-core, serious or critical:\n" + "\n".join(
        f"{name}: {line}" for name, lines in found.items() for line in lines)


def test_no_page_scrolls_sideways_on_a_phone(browser, live_app, subjects):
    context, page = _context(browser, live_app, PHONE, log_in=True)
    try:
        wide = {}
        for name, path in subjects.items():
            if (status := _visit(page, live_app.url + path)) >= 500:
                wide[name] = f"HTTP {status}"
                continue
            width = page.evaluate("() => document.documentElement.scrollWidth")
            if width > PHONE["width"]:
                wide[name] = width
        # The tournament's bracket and reveal table are wider than a phone: they scroll in their own box.
        _visit(page, live_app.url + subjects["tournament"])
        assert page.evaluate("() => { const b = document.querySelector('.bracket');"
                             " return b.scrollWidth > b.clientWidth; }")
    finally:
        context.close()
    assert not wide, f"pages wider than the phone's {PHONE['width']} px: {wide}"


def test_the_navigation_is_a_menu_on_a_phone_and_opens_by_keyboard(browser, live_app):
    context, page = _context(browser, live_app, PHONE, log_in=True)
    try:
        leaderboard = page.get_by_role("link", name="Leaderboard", exact=True)
        assert not leaderboard.is_visible()
        page.get_by_text("Menu", exact=True).click()
        leaderboard.wait_for(state="visible")
        screenshot(page, "pages-menu-open-phone", full_page=False)
        page.get_by_text("Menu", exact=True).click()
        leaderboard.wait_for(state="hidden")
        page.reload()  # by keyboard from the top: the skip link, the brand, then the menu
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.className") == "skip-link"
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.tagName") == "SUMMARY"
        page.keyboard.press("Enter")
        leaderboard.wait_for(state="visible")
        leaderboard.focus()
        page.keyboard.press("Enter")
        page.wait_for_url("**/leaderboard/")
    finally:
        context.close()
    context, page = _context(browser, live_app, DESKTOP, log_in=True)
    try:  # a desktop shows every link without a menu
        assert page.get_by_role("link", name="Leaderboard", exact=True).is_visible()
        assert not page.get_by_text("Menu", exact=True).is_visible()
    finally:
        context.close()


def test_a_streaming_answer_is_scrolled_into_view_on_a_phone(browser, live_app):
    context, page = _context(browser, live_app, PHONE, log_in=True)
    try:
        # Below the form, out of sight, before the answer starts.
        assert page.evaluate("() => document.querySelector('#result').getBoundingClientRect().top") > PHONE["height"]
        page.select_option("#id_model", FAST)
        page.fill("#id_prompt", "Name a planet.")
        page.fill("#id_max_new_tokens", "8")
        page.focus("#id_max_new_tokens")
        page.keyboard.press("Enter")  # the form sends by keyboard
        page.wait_for_function("() => { const g = document.querySelector('#generation');"
                               " if (!g) return false; const top = g.getBoundingClientRect().top;"
                               " return top >= 0 && top < window.innerHeight / 2; }", timeout=120_000)
        page.wait_for_function("() => document.querySelector('#gen-output').textContent.trim().length > 0",
                               timeout=120_000)
        screenshot(page, "pages-playground-streamed-phone", full_page=False)
    finally:
        context.close()
