"""The error pages a user meets are the site's own (the top bar, the stylesheet), and the icon is there."""

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client, RequestFactory, override_settings
from django.urls import path

from arena import urls as arena_urls

STYLESHEET = 'href="/static/css/arena.css"'


def _fails(request):
    raise RuntimeError("a view that fails, for the 500 page")


def _refuses(request):
    raise PermissionDenied  # no page of the arena raises it today; a view that will gets this page


# The URLconf of the tests below: the arena's, and two views that fail.
urlpatterns = [path("fails/", _fails), path("refuses/", _refuses), *arena_urls.urlpatterns]


@pytest.mark.django_db
def test_a_missing_page_is_the_sites_own_404(owner):
    client = Client()
    client.force_login(owner)
    response = client.get("/nothing-lives-here/")
    assert response.status_code == 404
    page = response.content.decode()
    assert 'data-error="404"' in page and STYLESHEET in page
    assert "Log out owner" in page  # the whole layout, with the signed-in user's menu


@pytest.mark.django_db
@pytest.mark.urls(__name__)
def test_a_refused_page_is_the_sites_own_403(owner):
    client = Client()
    client.force_login(owner)
    response = client.get("/refuses/")
    assert response.status_code == 403
    page = response.content.decode()
    assert 'data-error="403"' in page and STYLESHEET in page


@pytest.mark.django_db
@pytest.mark.urls(__name__)
@override_settings(DEBUG=False)
def test_a_failing_view_gets_the_styled_500_without_database_or_context(owner, django_assert_num_queries):
    client = Client(raise_request_exception=False)
    response = client.get("/fails/")
    assert response.status_code == 500
    page = response.content.decode()
    assert 'data-error="500"' in page and STYLESHEET in page
    from django.views.defaults import server_error

    with django_assert_num_queries(0):  # rendered with no context: nothing may reach the database
        assert 'data-error="500"' in server_error(RequestFactory().get("/")).content.decode()


@pytest.mark.django_db
def test_favicon_is_served(client):
    response = client.get("/favicon.ico")
    assert response.status_code in (200, 301, 302)
    if response.status_code != 200:
        response = client.get(response.headers["Location"])
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert body.startswith(b"<svg") and response.headers["Content-Type"] == "image/svg+xml"


@pytest.mark.django_db
def test_every_page_links_the_icon(client):
    assert 'rel="icon" href="/static/favicon.svg"' in client.get("/accounts/login/").content.decode()
