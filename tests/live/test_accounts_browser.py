"""A team moves in, in a real Chromium on the running application: a staff member makes an invitation
on /accounts/invitations/, someone with a browser of their own opens the link, chooses a username and
a password and lands logged in, changes that password, logs out and logs in with the new one. The
login page names no server path. Screenshots of the invitation and accept pages at both widths."""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import expect

from .artefacts import DESKTOP, PHONE, screenshot

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow]

FIRST_PASSWORD = "first-passphrase-for-the-arena"
SECOND_PASSWORD = "second-passphrase-for-the-arena"


def test_an_invited_person_joins_changes_their_password_and_logs_in_again(live_app, browser, page):
    # Nobody is told where the admin password file lives (or any other server path).
    page.goto(live_app.url + "accounts/login/")
    login_text = page.locator("main").inner_text()
    assert "admin-password" not in login_text and "var/" not in login_text
    assert "Forgot your password?" in login_text
    screenshot(page, "accounts-login-desktop")

    # Staff make an invitation; the link is shown once.
    live_app.log_in_page(page)
    page.click("header a[href='/accounts/invitations/']")
    page.wait_for_url("**/accounts/invitations/")
    page.fill("#id_note", "The newcomer from the data team")
    page.click("form[action='/accounts/invitations/'] button[type=submit]")
    link_box = page.locator("[data-new-invitation] input")
    expect(link_box).to_be_visible(timeout=30_000)
    link = link_box.input_value()
    assert link.startswith(live_app.url + "accounts/invite/invite_")
    expect(page.locator("[data-state=pending]").first).to_contain_text("The newcomer from the data team")
    screenshot(page, "accounts-invitations-desktop")
    page.set_viewport_size(PHONE)
    screenshot(page, "accounts-invitations-phone")
    page.set_viewport_size(DESKTOP)

    # The invitee, in a browser of their own, chooses a username and a password.
    username = f"newcomer-{uuid.uuid4().hex[:6]}"
    context = browser.new_context(viewport=PHONE)
    try:
        invitee = context.new_page()
        invitee.set_default_timeout(30_000)
        invitee.goto(link)
        expect(invitee.locator("[data-invitation-accept] h1")).to_have_text("Join LLM Arena")
        screenshot(invitee, "accounts-invitation-accept-phone")
        invitee.set_viewport_size(DESKTOP)
        screenshot(invitee, "accounts-invitation-accept-desktop")
        invitee.fill("#id_username", username)
        invitee.fill("#id_password1", FIRST_PASSWORD)
        invitee.fill("#id_password2", FIRST_PASSWORD)
        invitee.click("[data-invitation-accept] button[type=submit]")
        invitee.wait_for_url("**/playground/")
        expect(invitee.locator("header")).to_contain_text(f"Log out {username}")

        # The link worked once.
        again = context.new_page()
        assert again.goto(link).status == 410
        again.close()

        # A new password, from the navigation's link.
        invitee.click("header a[href='/accounts/password_change/']")
        invitee.wait_for_url("**/accounts/password_change/")
        screenshot(invitee, "accounts-password-change-desktop")
        invitee.fill("#id_old_password", FIRST_PASSWORD)
        invitee.fill("#id_new_password1", SECOND_PASSWORD)
        invitee.fill("#id_new_password2", SECOND_PASSWORD)
        invitee.click("[data-password-change] button[type=submit]")
        invitee.wait_for_url("**/accounts/password_change/done/")
        expect(invitee.locator("[data-password-changed]")).to_be_visible()

        # Log out, then in with the new password.
        invitee.click("header form[action='/accounts/logout/'] button")
        invitee.wait_for_url("**/accounts/login/")
        invitee.fill("#id_username", username)
        invitee.fill("#id_password", SECOND_PASSWORD)
        invitee.click("main button[type=submit]")
        invitee.wait_for_url("**/playground/")
        expect(invitee.locator("header")).to_contain_text(f"Log out {username}")
    finally:
        context.close()

    # Staff see the invitation used, by the newcomer.
    page.reload()
    expect(page.locator("[data-state=used]").first).to_contain_text(f"used by {username}")
