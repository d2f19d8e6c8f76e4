"""The live tests share one running application per test session (see app.py)."""

import pytest

from harness.app import ARGS, CHROMIUM, running_app

from .artefacts import WIDTHS


@pytest.fixture(scope="session")
def live_app(tmp_path_factory, redis_url):
    with running_app(redis_url, tmp_path_factory.mktemp("live-app")) as app:
        yield app


@pytest.fixture(scope="module")
def browser(live_app):
    """Debian's headless Chromium (one per test module)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def page(browser):
    """A page of its own browser context (one per test module), 1280×900."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


@pytest.fixture(params=list(WIDTHS))
def seen(request, browser, live_app):
    """(width name, a logged-in admin's page) at each width every page must work at, a context each."""
    context = browser.new_context(viewport=WIDTHS[request.param])
    page = context.new_page()
    page.set_default_timeout(30_000)
    live_app.log_in_page(page)
    yield request.param, page
    context.close()
