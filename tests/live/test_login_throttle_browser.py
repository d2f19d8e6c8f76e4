"""A held login as a person sees it, in a real Chromium on the running application: after one
address's wrong passwords at 20 usernames (the address cap), the right admin password from it
gets the lockout page, which says how long to wait and why, whole at both widths; staff's
`manage.py arena_unlock --address` lets it in at once (arena/accounts/throttle.py)."""

from __future__ import annotations

import re

import pytest
import requests
from playwright.sync_api import expect

from .artefacts import DESKTOP, PHONE, screenshot

pytestmark = [pytest.mark.live, pytest.mark.browser]


def fail_logins(url: str, count: int) -> None:
    with requests.Session() as session:
        page = session.get(url + "accounts/login/", timeout=10)
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        for i in range(count):
            answer = session.post(url + "accounts/login/", timeout=10, headers={"Referer": url + "accounts/login/"},
                                  data={"username": f"nobody-{i}", "password": "wrong", "csrfmiddlewaretoken": csrf})
            assert answer.status_code == 200, answer.status_code


def test_a_held_login_says_how_long_and_why_at_both_widths(live_app, browser):
    fail_logins(live_app.url, 20)  # every one from 127.0.0.1, as the browser below
    try:
        for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
            context = browser.new_context(viewport=viewport)
            page = context.new_page()
            page.goto(live_app.url + "accounts/login/")
            page.fill("#id_username", "admin")
            page.fill("#id_password", live_app.admin_password)
            page.click("main form button[type=submit]")
            held = page.locator("[data-locked-out]")
            expect(held).to_be_visible(timeout=30_000)
            text = held.inner_text()
            assert "Try again in 15 minutes" in text and "your network address" in text, text
            assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]  # nothing cut off
            screenshot(page, f"accounts-login-held-{name}")
            context.close()
    finally:
        live_app.manage("arena_unlock", "--address", "127.0.0.1")
    live_app.login()  # in at once after staff cleared the address
