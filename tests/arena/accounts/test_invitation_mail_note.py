"""An invitation says whether its e-mail went out: "sent to ..." only when a mail backend delivers
it; with the console (the default without EMAIL_HOST), dummy or file backend, that no mail server
is set and the link must be passed on by hand."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from arena.accounts import joining

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(db):
    browser = Client()
    browser.force_login(get_user_model().objects.create_user("lead", password="lead-pass-123", is_staff=True))
    return browser


def note(response) -> str:
    return re.search(r"<p class=\"hint\" data-mail-note>([^<]*)</p>", response.content.decode()).group(1)


@pytest.mark.parametrize("backend", ["console", "dummy"])
def test_without_a_mail_server_the_page_says_nothing_was_sent(settings, staff_client, backend):
    settings.EMAIL_BACKEND = f"django.core.mail.backends.{backend}.EmailBackend"
    response = staff_client.post("/accounts/invitations/", {"email": "bob@example.com"})
    assert note(response) == joining.MAIL_NOT_SET.format(email="bob@example.com")
    assert "was also sent" not in response.content.decode()


def test_a_delivering_backend_says_sent(settings, staff_client):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"  # as SMTP: it delivers
    response = staff_client.post("/accounts/invitations/", {"email": "bob@example.com"})
    assert note(response) == joining.MAIL_SENT.format(email="bob@example.com") and len(mail.outbox) == 1
