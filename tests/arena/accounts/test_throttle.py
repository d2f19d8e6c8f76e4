"""Login throttling (django-axes, arena/accounts/throttle.py): ARENA_LOGIN_FAILURE_LIMIT (5) failed
logins lock that username from any address and that address for any username, the right
password included, until the cool-off; a success clears its username's failures."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client, RequestFactory
from django.utils import timezone

from arena.accounts.throttle import client_address

pytestmark = pytest.mark.django_db
LIMIT = settings.AXES_FAILURE_LIMIT


def login(username, password, address="10.0.0.1", client=None):
    return (client or Client()).post("/accounts/login/", {"username": username, "password": password},
                                     REMOTE_ADDR=address)


def test_the_limit_is_five_with_a_cool_off():
    assert LIMIT == 5
    assert timedelta(minutes=15) == settings.AXES_COOLOFF_TIME


def test_failures_lock_the_username_from_any_address(owner, outsider):
    responses = [login("owner", "wrong-pass", f"10.0.1.{i}") for i in range(LIMIT)]
    assert [r.status_code for r in responses[:-1]] == [200] * (LIMIT - 1)  # the form again, with its error
    locked = responses[-1]
    assert locked.status_code == 429 and locked["Retry-After"] == str(15 * 60)
    assert "Too many failed logins" in locked.content.decode()
    # The right password, from an address never seen before: still refused.
    refused = login("owner", "owner-pass-1", "10.0.9.9")
    assert refused.status_code == 429 and "_auth_user_id" not in refused.client.session
    # Those addresses are not locked for everyone else (one failure each).
    assert login("outsider", "outsider-pass-1", "10.0.1.0").status_code == 302


def test_failures_lock_the_address_for_any_username(owner, outsider):
    for i in range(LIMIT):
        login(f"guess-{i}", "wrong-pass", "10.0.2.1")
    assert login("owner", "owner-pass-1", "10.0.2.1").status_code == 429
    assert login("outsider", "outsider-pass-1", "10.0.2.1").status_code == 429
    assert login("owner", "owner-pass-1", "10.0.2.2").status_code == 302  # the user is not locked elsewhere


def test_the_right_password_works_again_after_the_cool_off(owner):
    for _ in range(LIMIT):
        login("owner", "wrong-pass")
    assert login("owner", "owner-pass-1").status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=14))
    assert login("owner", "owner-pass-1").status_code == 429  # not yet
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    browser = Client()
    assert login("owner", "owner-pass-1", client=browser).status_code == 302
    assert browser.get("/playground/").status_code == 200


def test_a_success_clears_its_usernames_failures(owner, outsider):
    for _ in range(LIMIT - 1):
        login("owner", "wrong-pass", "10.0.3.1")
    assert login("owner", "owner-pass-1", "10.0.3.2").status_code == 302
    for _ in range(LIMIT - 1):
        assert login("owner", "wrong-pass", "10.0.3.3").status_code == 200  # counting from zero again
    assert login("owner", "owner-pass-1", "10.0.3.4").status_code == 302


def test_logging_in_to_ones_own_account_does_not_clear_guesses_at_another(owner, outsider):
    """Another user's success from the same address clears only their own failures."""
    for _ in range(LIMIT - 1):
        login("owner", "wrong-pass", "10.0.4.1")
    assert login("outsider", "outsider-pass-1", "10.0.4.2").status_code == 302
    assert login("owner", "wrong-pass", "10.0.4.3").status_code == 429


def test_staff_are_throttled_on_the_admin_login_too(db):
    get_user_model().objects.create_superuser("boss", password="boss-pass-123")
    for _ in range(LIMIT):
        Client().post("/admin/login/", {"username": "boss", "password": "nope"}, REMOTE_ADDR="10.0.5.1")
    response = Client().post("/admin/login/", {"username": "boss", "password": "boss-pass-123"},
                             REMOTE_ADDR="10.0.5.2")
    assert response.status_code == 429


def test_the_client_address_behind_a_proxy_is_the_one_it_appended(settings):
    request = RequestFactory().post("/accounts/login/", REMOTE_ADDR="192.168.0.10",
                                    HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7")
    settings.ARENA_BEHIND_PROXY = False
    assert client_address(request) == "192.168.0.10"  # a client can write X-Forwarded-For itself
    settings.ARENA_BEHIND_PROXY = True
    assert client_address(request) == "203.0.113.7"  # what the proxy saw, not what the client wrote
    assert client_address(RequestFactory().get("/", REMOTE_ADDR="192.168.0.10")) == "192.168.0.10"
