"""Login throttling (arena/accounts/throttle.py; the rule in login_policy.py), through the login
page with real Redis and a clock the test moves.

Issue 39: five wrong passwords from anywhere locked any username, admin included, for 15 minutes
(each further try restarting the wait; the right password got 429), and the same five locked the
address for every username. Now: a growing delay per (username, client), a cap per address
across usernames, a much higher cap per username across addresses, and a browser that logged in
to the account before is held by none of the others' failures."""

from io import StringIO

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client, RequestFactory

from arena.accounts import throttle
from arena.accounts.throttle import client_address

pytestmark = pytest.mark.django_db
RIGHT = "owner-pass-1"


def login(username, password, address="10.0.0.1", client=None):
    return (client or Client()).post("/accounts/login/", {"username": username, "password": password},
                                     REMOTE_ADDR=address)


def held(response, retry_after: int | None = None) -> bool:
    """The lockout page (and, when given, exactly this Retry-After)."""
    ok = response.status_code == 429 and "Too many failed logins" in response.content.decode()
    return ok and (retry_after is None or response["Retry-After"] == str(retry_after))


def logged_in(response) -> bool:
    return response.status_code == 302 and "_auth_user_id" in response.client.session


def test_the_defaults():
    assert (settings.ARENA_LOGIN_FREE_FAILURES, settings.ARENA_LOGIN_MAX_DELAY_S, settings.ARENA_LOGIN_ADDRESS_LIMIT,
            settings.ARENA_LOGIN_USERNAME_LIMIT, settings.ARENA_LOGIN_WINDOW_MIN) == (2, 300, 20, 50, 15)


def test_a_strangers_failures_do_not_lock_the_user_out_from_another_address(owner, clock):
    """The issue's attack: a stranger's wrong passwords at someone else's username, from one address."""
    for _ in range(5):
        login("owner", "wrong-pass", "10.0.1.1")
        clock.advance(600)  # past every delay: the stranger keeps trying within the pair's rules
    assert logged_in(login("owner", RIGHT, "10.0.2.2"))
    # Five failures from one address at five usernames lock that address for nobody either.
    for i in range(5):
        assert login(f"guess-{i}", "wrong-pass", "10.0.3.1").status_code == 200
    assert logged_in(login("owner", RIGHT, "10.0.3.1"))


def test_the_delay_grows_and_a_held_try_does_not_make_it_longer(owner, clock):
    # the form again, three times (spellings of one username count as one)
    assert [login(name, "wrong-pass").status_code for name in ("owner", "Owner", "OWNER")] == [200, 200, 200]
    # After the 3rd failure the next try waits 1 s; the right password too (it is not even checked).
    assert held(login("owner", RIGHT), retry_after=1)
    assert held(login("owner", RIGHT), retry_after=1)  # held again: the wait did not grow
    for wait in (1, 2, 4, 8):
        clock.advance(wait)
        assert login("owner", "wrong-pass").status_code == 200
        assert held(login("owner", RIGHT), retry_after=wait * 2)
    clock.advance(16)
    assert logged_in(login("owner", RIGHT))
    # That success restarted this client's count: two free failures again.
    assert [login("owner", "wrong-pass").status_code for _ in range(3)] == [200, 200, 200]


def test_the_delay_is_capped_and_failures_lapse_after_the_window(owner, clock):
    attempt = throttle.Attempt("owner", "10.0.4.1")
    waits = []
    for _ in range(13):
        clock.advance(waits[-1] if waits else 0)
        assert login("owner", "wrong-pass", "10.0.4.1").status_code == 200
        waits.append(throttle.current().check(attempt).retry_after_s)  # reading: counts nothing
    assert waits == [0, 0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]
    assert held(login("owner", RIGHT, "10.0.4.1"), retry_after=300)
    clock.advance(settings.ARENA_LOGIN_WINDOW_MIN * 60)  # every failure is older than the window now
    assert [login("owner", "wrong-pass", "10.0.4.1").status_code for _ in range(3)] == [200, 200, 200]


def test_one_address_guessing_across_usernames_is_capped(owner, outsider, clock):
    for i in range(settings.ARENA_LOGIN_ADDRESS_LIMIT):
        assert login(f"guess-{i}", "wrong-pass", "10.0.5.1").status_code == 200
    clock.advance(60)
    page = login("owner", RIGHT, "10.0.5.1")
    assert held(page, retry_after=15 * 60 - 60) and 'data-held-by="address"' in page.content.decode()
    assert logged_in(login("outsider", "outsider-pass-1", "10.0.5.2"))  # only that address
    clock.advance(15 * 60 - 60)
    assert logged_in(login("owner", RIGHT, "10.0.5.1"))


def test_an_attack_on_a_username_from_many_addresses_never_holds_its_owners_browser(owner, outsider, clock):
    mine = Client()
    assert logged_in(login("owner", RIGHT, "10.0.6.1", client=mine))
    assert throttle.DEVICE_COOKIE in mine.cookies
    mine.post("/accounts/logout/")
    # Many addresses, one of them the owner's own (a shared network): past the username's cap, and
    # past that address's cap too (guesses at other accounts from there).
    for i in range(settings.ARENA_LOGIN_USERNAME_LIMIT):
        assert login("owner", "wrong-pass", "10.0.6.1" if i < 2 else f"10.0.7.{i}").status_code == 200
    for i in range(settings.ARENA_LOGIN_ADDRESS_LIMIT):
        login(f"guess-{i}", "wrong-pass", "10.0.6.1")
    assert held(login("outsider", "outsider-pass-1", "10.0.6.1"))
    stranger_page = login("owner", RIGHT, "10.0.8.1")  # a browser the account has not seen
    assert held(stranger_page) and 'data-held-by="username"' in stranger_page.content.decode()
    assert logged_in(login("owner", RIGHT, "10.0.6.1", client=mine))  # the owner's browser: in at once


def test_a_trusted_browser_is_held_by_its_own_failures_and_trusted_no_more_after_a_password_change(owner, clock):
    mine = Client()
    assert logged_in(login("owner", RIGHT, client=mine))
    mine.post("/accounts/logout/")
    for _ in range(3):
        assert login("owner", "wrong-pass", client=mine).status_code == 200
    assert held(login("owner", RIGHT, client=mine), retry_after=1)  # a stolen cookie gives no free guesses
    clock.advance(1)
    assert logged_in(login("owner", RIGHT, client=mine))
    mine.post("/accounts/logout/")
    for i in range(settings.ARENA_LOGIN_USERNAME_LIMIT):
        login("owner", "wrong-pass", f"10.0.9.{i}")
    owner.set_password("a-new-passphrase-7")
    owner.save()
    assert held(login("owner", "a-new-passphrase-7", client=mine))  # that browser's trust was for the old one
    forged = Client()
    forged.cookies[throttle.DEVICE_COOKIE] = mine.cookies[throttle.DEVICE_COOKIE].value[:-2] + "xx"
    assert held(login("owner", "a-new-passphrase-7", client=forged))


def test_staff_unlock_a_username_or_an_address(owner, outsider, clock):
    for i in range(settings.ARENA_LOGIN_USERNAME_LIMIT):
        login("owner", "wrong-pass", f"10.1.0.{i}")
    for i in range(settings.ARENA_LOGIN_ADDRESS_LIMIT):
        login(f"guess-{i}", "wrong-pass", "10.1.1.1")
    assert held(login("owner", RIGHT, "10.1.2.1")) and held(login("outsider", "outsider-pass-1", "10.1.1.1"))
    out = StringIO()
    call_command("arena_unlock", username="owner", stdout=out)
    assert out.getvalue().startswith(f"Cleared {settings.ARENA_LOGIN_USERNAME_LIMIT + 1} failure counts")
    assert logged_in(login("owner", RIGHT, "10.1.2.1"))
    assert held(login("outsider", "outsider-pass-1", "10.1.1.1"))
    call_command("arena_unlock", address="10.1.1.1", stdout=StringIO())
    assert logged_in(login("outsider", "outsider-pass-1", "10.1.1.1"))


def test_staff_are_throttled_on_the_admin_login_too(clock):
    get_user_model().objects.create_superuser("boss", password="boss-pass-123")
    for _ in range(3):
        Client().post("/admin/login/", {"username": "boss", "password": "nope"}, REMOTE_ADDR="10.0.10.1")
    response = Client().post("/admin/login/", {"username": "boss", "password": "boss-pass-123"},
                             REMOTE_ADDR="10.0.10.1")
    assert held(response, retry_after=1)
    other = Client().post("/admin/login/", {"username": "boss", "password": "boss-pass-123"}, REMOTE_ADDR="10.0.10.2")
    assert other.status_code == 302  # from elsewhere: in


def test_the_client_address_behind_a_proxy_is_the_one_it_appended(settings):
    request = RequestFactory().post("/accounts/login/", REMOTE_ADDR="192.168.0.10",
                                    HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7")
    settings.ARENA_BEHIND_PROXY = False
    assert client_address(request) == "192.168.0.10"  # a client can write X-Forwarded-For itself
    settings.ARENA_BEHIND_PROXY = True
    assert client_address(request) == "203.0.113.7"  # what the proxy saw, not what the client wrote
    assert client_address(RequestFactory().get("/", REMOTE_ADDR="192.168.0.10")) == "192.168.0.10"
