"""How a team moves in: staff invitations (one-time, expiring, revocable links), open sign-up with
staff approval (off unless ARENA_OPEN_SIGNUP), the login page, and `arena_token` refusing to make
a user silently."""

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from arena.accounts import joining
from arena.accounts.forms import WAITING_FOR_APPROVAL
from arena.accounts.models import ApiToken, Invitation, SignUp

pytestmark = pytest.mark.django_db
User = get_user_model()
NEW_PASSWORD = "a-long-new-passphrase-7"
LINK = re.compile(r'value="(http://testserver/accounts/invite/(invite_[^"/]+)/)"')


@pytest.fixture
def staff(db):
    return User.objects.create_user("lead", password="lead-pass-123", is_staff=True)


@pytest.fixture
def staff_client(staff):
    browser = Client()
    browser.force_login(staff)
    return browser


def invite(staff_client, **data) -> tuple[str, str]:
    """Create an invitation on the page; (the link shown, its token)."""
    response = staff_client.post("/accounts/invitations/", data)
    assert response.status_code == 200, response.content.decode()[:2000]
    link, token = LINK.search(response.content.decode()).groups()
    return link, token


def join(token, username="newcomer", password=NEW_PASSWORD, browser=None):
    browser = browser or Client()
    return browser.post(f"/accounts/invite/{token}/", {"username": username, "password1": password,
                                                       "password2": password})


# --- invitations ----------------------------------------------------------------------------
def test_an_invitation_makes_one_account_and_logs_it_in(staff_client):
    link, token = invite(staff_client, note="Ada from the data team")
    assert not Invitation.objects.filter(digest=token).exists()  # only a hash is kept
    browser = Client()
    page = browser.get(link)
    assert page.status_code == 200 and "Create my account" in page.content.decode()
    response = join(token, browser=browser)
    assert response.status_code == 302 and response["Location"] == reverse("playground")
    user = User.objects.get(username="newcomer")
    assert user.check_password(NEW_PASSWORD) and user.is_active and not user.is_staff
    assert browser.session["_auth_user_id"] == str(user.id)
    assert browser.get("/playground/").status_code == 200
    invitation = Invitation.objects.get()
    assert invitation.state == "used" and invitation.used_by == user
    # The list shows it used, by whom; the link is never shown again.
    listing = staff_client.get("/accounts/invitations/").content.decode()
    assert f'data-invitation="{invitation.id}" data-state="used"' in listing and "used by newcomer" in listing
    assert token not in listing


def test_a_used_link_makes_no_second_account(staff_client):
    _link, token = invite(staff_client)
    assert join(token).status_code == 302
    again = join(token, username="second-comer")
    assert again.status_code == 410 and joining.INVITATION_GONE["used"] in again.content.decode()
    assert Client().get(f"/accounts/invite/{token}/").status_code == 410
    assert not User.objects.filter(username="second-comer").exists()


def test_an_expired_link_is_refused(staff_client):
    _link, token = invite(staff_client, days="3")
    invitation = Invitation.objects.get()
    assert timedelta(days=2, hours=23) < invitation.expires_at - timezone.now() <= timedelta(days=3)
    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    response = join(token)
    assert response.status_code == 410 and joining.INVITATION_GONE["expired"] in response.content.decode()
    assert not User.objects.filter(username="newcomer").exists()
    assert 'data-state="expired"' in staff_client.get("/accounts/invitations/").content.decode()


def test_the_default_expiry_is_the_setting(staff_client, settings):
    settings.ARENA_INVITATION_DAYS = 2
    invite(staff_client)
    left = Invitation.objects.get().expires_at - timezone.now()
    assert timedelta(days=1, hours=23) < left <= timedelta(days=2)


def test_a_revoked_link_is_refused(staff_client):
    _link, token = invite(staff_client)
    invitation = Invitation.objects.get()
    assert staff_client.post(f"/accounts/invitations/{invitation.id}/revoke").status_code == 302
    invitation.refresh_from_db()
    assert invitation.state == "revoked"
    response = join(token)
    assert response.status_code == 410 and joining.INVITATION_GONE["revoked"] in response.content.decode()
    assert not User.objects.filter(username="newcomer").exists()


def test_a_used_invitation_cannot_be_revoked(staff_client):
    _link, token = invite(staff_client)
    join(token)
    invitation = Invitation.objects.get()
    assert invitation.revoke() is False and Invitation.objects.get().state == "used"


def test_an_unknown_link_is_a_404_that_says_so():
    for token in ("invite_" + "x" * 43, "nothing-like-it"):
        response = Client().get(f"/accounts/invite/{token}/")
        assert response.status_code == 404 and joining.INVITATION_UNKNOWN in response.content.decode()


def test_an_invitation_is_claimed_once(staff_client):
    """Two people sending the form of one link at once: the claim is one conditional update, in the
    transaction that made the user, so only one claim succeeds (the view rolls the other's user back)."""
    invite(staff_client)
    invitation = Invitation.objects.get()
    first = User.objects.create_user("first")
    assert invitation.claim(first) is True
    assert invitation.claim(User.objects.create_user("second")) is False


def test_a_link_claimed_while_the_form_was_sent_makes_no_account(staff_client):
    """The other holder of the link wins between the page's check and this claim (their claim is made
    here, through Django's query hook, the moment this form's user is inserted): this form's user is
    rolled back and the page says what happened."""
    _link, token = invite(staff_client)
    invitation = Invitation.objects.get()
    rival = User.objects.create_user("rival")

    def rival_claims_first(execute, sql, params, many, context):
        if sql.startswith('INSERT INTO "auth_user"'):
            Invitation.objects.filter(id=invitation.id).update(used_at=timezone.now(), used_by=rival)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(rival_claims_first):
        response = join(token)
    assert response.status_code == 410 and joining.INVITATION_TAKEN_MEANWHILE in response.content.decode()
    assert not User.objects.filter(username="newcomer").exists()


def test_the_invitees_password_must_pass_djangos_validators(staff_client):
    _link, token = invite(staff_client)
    response = join(token, password="password")  # too common, too short
    assert response.status_code == 400 and "This password is too common." in response.content.decode()
    assert not User.objects.filter(username="newcomer").exists()
    assert Invitation.objects.get().state == "pending"  # the link still works for a better password


def test_an_invitee_cannot_take_a_username_in_use(staff_client, owner):
    _link, token = invite(staff_client)
    response = join(token, username="OWNER")
    assert response.status_code == 400 and "A user with that username already exists." in response.content.decode()
    assert Invitation.objects.get().state == "pending"


def test_non_staff_cannot_make_or_revoke_invitations(owner, staff_client):
    invite(staff_client)
    invitation = Invitation.objects.get()
    member = Client()
    member.force_login(owner)
    for response in (member.get("/accounts/invitations/"), member.post("/accounts/invitations/", {"note": "x"}),
                     member.post(f"/accounts/invitations/{invitation.id}/revoke")):
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert Invitation.objects.count() == 1 and Invitation.objects.get().state == "pending"
    assert Client().post("/accounts/invitations/", {"note": "x"}).status_code == 302
    assert Invitation.objects.count() == 1


def test_an_invitation_with_an_address_is_mailed_and_sets_it(staff_client):
    link, token = invite(staff_client, email="ada@example.org")
    assert len(mail.outbox) == 1
    sent = mail.outbox[0]
    assert sent.to == ["ada@example.org"] and link in sent.body
    join(token)
    assert User.objects.get(username="newcomer").email == "ada@example.org"


def test_the_page_with_a_new_link_is_not_cached(staff_client):
    response = staff_client.post("/accounts/invitations/", {})
    assert "no-store" in response["Cache-Control"]


# --- open sign-up ---------------------------------------------------------------------------
SIGN_UP = {"username": "walk-in", "email": "walk@example.org", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD}


def test_sign_up_is_off_by_default():
    assert Client().get("/accounts/signup/").status_code == 404
    assert Client().post("/accounts/signup/", SIGN_UP).status_code == 404
    assert not User.objects.filter(username="walk-in").exists()
    assert "data-signup-link" not in Client().get("/accounts/login/").content.decode()


def test_a_sign_up_waits_for_approval_then_logs_in(settings, staff_client):
    settings.ARENA_OPEN_SIGNUP = True
    assert "data-signup-link" in Client().get("/accounts/login/").content.decode()
    response = Client().post("/accounts/signup/", SIGN_UP)
    assert response.status_code == 302
    assert "data-signup-sent" in Client().get(response["Location"]).content.decode()
    user = User.objects.get(username="walk-in")
    assert not user.is_active and user.sign_up.waiting
    # The right password is told it waits; a wrong one learns nothing more than any failed login.
    waiting = Client().post("/accounts/login/", {"username": "walk-in", "password": NEW_PASSWORD})
    assert waiting.status_code == 200 and WAITING_FOR_APPROVAL.replace("'", "&#x27;") in waiting.content.decode()
    wrong = Client().post("/accounts/login/", {"username": "walk-in", "password": "not-it-at-all"}).content.decode()
    assert "Please enter a correct username and password" in wrong and "approval" not in wrong
    # Staff see it waiting and approve it.
    page = staff_client.get("/accounts/invitations/").content.decode()
    assert 'data-sign-up="walk-in"' in page
    assert staff_client.post(f"/accounts/sign-ups/{user.sign_up.id}/approve").status_code == 302
    user.refresh_from_db()
    assert user.is_active and not user.sign_up.waiting and user.sign_up.approved_by.username == "lead"
    browser = Client()
    assert browser.post("/accounts/login/", {"username": "walk-in", "password": NEW_PASSWORD}).status_code == 302
    assert browser.get("/playground/").status_code == 200
    assert 'data-sign-up="walk-in"' not in staff_client.get("/accounts/invitations/").content.decode()


def test_a_refused_sign_up_is_deleted(settings, staff_client):
    settings.ARENA_OPEN_SIGNUP = True
    Client().post("/accounts/signup/", SIGN_UP)
    sign_up = SignUp.objects.get()
    assert staff_client.post(f"/accounts/sign-ups/{sign_up.id}/refuse").status_code == 302
    assert not User.objects.filter(username="walk-in").exists() and not SignUp.objects.exists()


def test_non_staff_cannot_approve_a_sign_up(settings, owner):
    settings.ARENA_OPEN_SIGNUP = True
    Client().post("/accounts/signup/", SIGN_UP)
    member = Client()
    member.force_login(owner)
    assert member.post(f"/accounts/sign-ups/{SignUp.objects.get().id}/approve").status_code == 302
    assert not User.objects.get(username="walk-in").is_active


def test_the_admin_action_approves_sign_ups(settings, db):
    settings.ARENA_OPEN_SIGNUP = True
    Client().post("/accounts/signup/", SIGN_UP)
    boss = User.objects.create_superuser("boss", password="boss-pass-123")
    admin = Client()
    admin.force_login(boss)
    response = admin.post("/admin/accounts/signup/", {"action": "approve",
                                                      "_selected_action": [SignUp.objects.get().id]})
    assert response.status_code == 302
    assert User.objects.get(username="walk-in").is_active


def test_a_deactivated_member_is_not_told_about_approval(owner):
    """Only a sign-up still waiting is told it waits: a member staff deactivated gets the usual refusal."""
    owner.is_active = False
    owner.save()
    response = Client().post("/accounts/login/", {"username": "owner", "password": "owner-pass-1"})
    assert "approval" not in response.content.decode()


def test_the_login_form_is_still_throttled(settings, clock):
    settings.ARENA_OPEN_SIGNUP = True
    Client().post("/accounts/signup/", SIGN_UP)
    for _ in range(settings.ARENA_LOGIN_FREE_FAILURES + 1):
        Client().post("/accounts/login/", {"username": "walk-in", "password": "wrong-guess-1"},
                      REMOTE_ADDR="10.9.0.1")
    locked = Client().post("/accounts/login/", {"username": "walk-in", "password": NEW_PASSWORD},
                           REMOTE_ADDR="10.9.0.1")
    assert locked.status_code == 429 and "approval" not in locked.content.decode()


# --- the login page and arena_token ---------------------------------------------------------
def test_the_login_page_names_no_server_path():
    body = Client().get("/accounts/login/").content.decode()
    assert "admin-password" not in body and "var/" not in body
    assert 'href="/accounts/password_reset/"' in body


def test_arena_token_refuses_to_create_a_user_without_the_flag(db):
    with pytest.raises(CommandError, match="--create-service-account"):
        call_command("arena_token", "nobody-yet", stdout=StringIO())
    assert not User.objects.filter(username="nobody-yet").exists() and not ApiToken.objects.exists()


def test_arena_token_creates_a_service_account_only_with_the_flag(db):
    out = StringIO()
    call_command("arena_token", "ci-bot", "--create-service-account", stdout=out, stderr=StringIO())
    user = User.objects.get(username="ci-bot")
    assert not user.has_usable_password() and ApiToken.objects.user_for(out.getvalue().strip()) == user


def test_arena_token_gives_an_existing_user_a_token_without_the_flag(owner):
    out = StringIO()
    call_command("arena_token", "owner", stdout=out)
    assert ApiToken.objects.user_for(out.getvalue().strip()) == owner
    owner.refresh_from_db()
    assert owner.check_password("owner-pass-1")  # the password is left alone
