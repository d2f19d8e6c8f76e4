"""A user's own password: changing it (/accounts/password_change/) and resetting it by e-mail
(Django's views, our templates): the link in the e-mail works once."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "a-brand-new-passphrase-9"


@pytest.fixture
def member(db):
    return get_user_model().objects.create_user("member", email="member@example.org", password="member-pass-1")


def logged_in(user):
    browser = Client()
    browser.force_login(user)
    return browser


def test_a_user_changes_their_password(member):
    browser, elsewhere = logged_in(member), logged_in(member)
    page = browser.get("/accounts/password_change/")
    assert page.status_code == 200 and "data-password-change" in page.content.decode()
    assert 'href="/accounts/password_change/"' in page.content.decode()  # the navigation links to it
    response = browser.post("/accounts/password_change/", {
        "old_password": "member-pass-1", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/accounts/password_change/done/"
    assert "data-password-changed" in browser.get(response["Location"]).content.decode()
    member.refresh_from_db()
    assert member.check_password(NEW_PASSWORD)
    assert browser.get("/playground/").status_code == 200  # this session stays logged in
    assert elsewhere.get("/playground/").status_code == 302  # the others are logged out (as the page says)


def test_a_password_change_needs_the_old_password_and_a_valid_new_one(member):
    browser = logged_in(member)
    wrong_old = browser.post("/accounts/password_change/", {"old_password": "not-it", "new_password1": NEW_PASSWORD,
                                                            "new_password2": NEW_PASSWORD})
    assert wrong_old.status_code == 200 and "Your old password was entered incorrectly" in wrong_old.content.decode()
    weak = browser.post("/accounts/password_change/", {"old_password": "member-pass-1", "new_password1": "password",
                                                       "new_password2": "password"})
    assert "This password is too common." in weak.content.decode()
    member.refresh_from_db()
    assert member.check_password("member-pass-1")


def test_the_password_pages_need_a_login():
    response = Client().get("/accounts/password_change/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_a_reset_link_by_e_mail_sets_a_new_password_once(member):
    browser = Client()
    assert "data-password-reset" in browser.get("/accounts/password_reset/").content.decode()
    response = browser.post("/accounts/password_reset/", {"email": "member@example.org"})
    assert response.status_code == 302 and response["Location"] == "/accounts/password_reset/done/"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["member@example.org"]
    assert mail.outbox[0].subject == "Reset your LLM Arena password"
    link = re.search(r"http://testserver(/accounts/reset/[^/\s]+/[^/\s]+/)", mail.outbox[0].body).group(1)
    form = browser.get(link, follow=True)  # Django redirects to a URL without the token, kept in the session
    assert "data-password-reset-confirm" in form.content.decode() and "Choose a new password" in form.content.decode()
    done = browser.post(form.redirect_chain[-1][0], {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert done.status_code == 302 and done["Location"] == "/accounts/reset/done/"
    member.refresh_from_db()
    assert member.check_password(NEW_PASSWORD)
    again = Client().get(link, follow=True).content.decode()
    assert "data-reset-link-invalid" in again  # used once: the password it was made for changed
    assert Client().post("/accounts/login/", {"username": "member", "password": NEW_PASSWORD}).status_code == 302


def test_a_reset_for_an_unknown_address_sends_nothing_and_says_the_same(member):
    response = Client().post("/accounts/password_reset/", {"email": "nobody@example.org"})
    assert response.status_code == 302 and response["Location"] == "/accounts/password_reset/done/"
    assert mail.outbox == []


def test_a_service_account_gets_no_reset_mail(db):
    get_user_model().objects.create_user("robot", email="robot@example.org")  # no password: tokens only
    Client().post("/accounts/password_reset/", {"email": "robot@example.org"})
    assert mail.outbox == []


def test_wrong_old_passwords_count_as_failed_logins(member, clock):
    """A borrowed session cannot guess the password on the change page: each wrong old password is a
    failed login of that username from this client, held by the same growing delay, here and on the
    login page (arena/accounts/throttle.py)."""
    browser = logged_in(member)
    wrong = {"old_password": "a-guess", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    answers = [browser.post("/accounts/password_change/", wrong, REMOTE_ADDR="10.8.0.1") for _ in range(3)]
    assert [a.status_code for a in answers] == [200] * 3
    right = {**wrong, "old_password": "member-pass-1"}
    held = browser.post("/accounts/password_change/", right, REMOTE_ADDR="10.8.0.1")
    assert held.status_code == 429 and "Too many failed logins" in held.content.decode() and held["Retry-After"] == "1"
    member.refresh_from_db()
    assert member.check_password("member-pass-1")  # unchanged
    login = Client().post("/accounts/login/", {"username": "member", "password": "member-pass-1"},
                          REMOTE_ADDR="10.8.0.1")
    assert login.status_code == 429
