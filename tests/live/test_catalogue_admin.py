"""The catalogue through the whole running application: an openai entry whose key is stored (an API
token of this app, pasted once) is checked against this app's own /v1 before it is enabled, and
its worker really sends the key (the app's /v1 refuses any other), which appears nowhere else:
not in the worker's command line, Redis or the logs. In Chromium, an entry's page shows only its
engine's sections, switching as the engine changes, and its Test button reports a generation."""

import pytest

from .artefacts import DESKTOP, PHONE, screenshot

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.browser]
CHANGELIST = "admin/catalogue/modelentry/"


@pytest.fixture(scope="module")
def staff_token(live_app):
    return live_app.manage("arena_token", "catalogue-keys", "--staff", "--create-service-account").splitlines()[-1]


@pytest.fixture(scope="module")
def stored(live_app, staff_token):
    """An openai entry on this app's own /v1, its key (a fresh API token of the admin) stored."""
    key = live_app.token("admin")
    created = live_app.api(staff_token, "post", "/api/v1/catalogue", json={
        "slug": "self-stored-key", "name": "SmolLM2 over this arena's /v1, stored key", "engine": "openai",
        "base_url": live_app.url + "v1", "remote_model": "smollm2-135m-llamacpp", "api_key": key,
        "max_concurrency": 2})
    assert created.status_code == 201, created.text
    return key, created.json()


def test_a_stored_key_is_checked_used_by_the_worker_and_found_nowhere_else(live_app, stored):
    key, entry = stored
    assert entry["enabled"] and entry["api_key_stored"] and entry["check_error"] == "", entry  # /v1/models listed it
    token = live_app.token("admin")
    started = live_app.api(token, "post", "/api/v1/generations", json={
        "model": "self-stored-key", "prompt": "Name a colour.", "params": {"temperature": 0, "max_new_tokens": 12}})
    assert started.status_code == 202, started.text
    done = live_app.wait_generation(token, started.json()["id"], timeout=180)
    assert done["status"] == "done" and done["text"].strip(), done

    import psutil

    worker = psutil.Process(live_app.worker_pid("self-stored-key"))
    assert key not in " ".join(worker.cmdline())
    assert any(value == key for value in worker.environ().values())  # where the backend put it
    for name, value in redis_values(live_app.redis, live_app.prefix):
        assert key.encode() not in value, name
    for log in live_app.data_dir.rglob("*.log"):
        assert key not in log.read_text(errors="replace"), log


def redis_values(client, prefix: str):
    """(key, its value as bytes) for every key under `prefix`, read by type (DUMP may compress)."""
    readers = {b"string": client.get, b"hash": client.hgetall, b"list": lambda n: client.lrange(n, 0, -1),
               b"set": client.smembers, b"zset": lambda n: client.zrange(n, 0, -1), b"stream": client.xrange}
    for name in client.scan_iter(match=f"{prefix}:*", count=1000):
        kind = client.type(name)
        if kind in readers:  # b"none": gone since the scan
            yield name, repr(readers[kind](name)).encode()


@pytest.fixture(scope="module")
def console_errors(page):
    """What the page's console reports as errors (a script the Content-Security-Policy refused, say)."""
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    return errors


@pytest.fixture(scope="module")
def admin_page(live_app, page, console_errors):
    live_app.log_in_page(page)
    return page


def entry_page(page, live_app, slug: str) -> None:
    page.goto(live_app.url + CHANGELIST + f"?q={slug}")
    page.click("th.field-name a")
    page.wait_for_selector("#modelentry_form")


def test_the_form_shows_only_the_chosen_engines_sections(live_app, admin_page, stored, console_errors):
    page = admin_page
    entry_page(page, live_app, "self-stored-key")
    assert page.is_visible("#id_base_url") and page.is_visible("#id_api_key")
    assert page.is_hidden("#id_precision") and page.is_hidden("#id_gguf_file") and page.is_hidden("#id_draft")
    assert page.is_visible("text=A key is stored (it is never shown)")
    assert page.input_value("#id_api_key") == ""
    screenshot(page, "catalogue-entry-openai-desktop")
    page.set_viewport_size(PHONE)
    screenshot(page, "catalogue-entry-openai-phone")
    page.set_viewport_size(DESKTOP)

    page.select_option("#id_engine", "transformers")  # the page's script shows that engine's sections
    page.wait_for_selector("#id_precision", state="visible")
    assert page.is_visible("#id_gguf_file") and page.is_visible("#id_draft")
    assert page.is_hidden("#id_base_url") and page.is_hidden("#id_api_key")

    entry_page(page, live_app, "smollm2-135m")
    assert page.is_visible("#id_precision") and page.is_hidden("#id_base_url")
    screenshot(page, "catalogue-entry-transformers-desktop")
    assert console_errors == []


def test_the_test_button_reports_a_generation_on_the_entry_page(live_app, admin_page):
    page = admin_page
    entry_page(page, live_app, "smollm2-135m-llamacpp")
    page.click("button[data-catalogue-test]")
    message = page.wait_for_selector("ul.messagelist li.success", timeout=180_000)
    assert message.inner_text().lower().startswith("smollm2-135m-llamacpp: answered in")
    assert "tokens/s" in message.inner_text()
    screenshot(page, "catalogue-entry-tested-desktop")


def test_a_new_host_on_the_entry_page_removes_the_stored_key_and_says_so(live_app, admin_page, staff_token):
    """The same app under another name is another origin: the key pasted for the first stays behind."""
    created = live_app.api(staff_token, "post", "/api/v1/catalogue", json={
        "slug": "moved-key", "name": "Moved key", "engine": "openai", "base_url": live_app.url + "v1",
        "remote_model": "smollm2-135m-llamacpp", "api_key": live_app.token("admin"), "cpus": 0.25})
    assert created.status_code == 201 and created.json()["enabled"], created.text
    page = admin_page
    entry_page(page, live_app, "moved-key")
    assert page.is_visible("text=It goes only to this base URL's host")
    assert page.is_visible("text=must begin with ARENA_ENDPOINT_KEY_")
    page.fill("#id_base_url", live_app.url.replace("127.0.0.1", "localhost") + "v1")
    page.click("input[name=_continue]")
    warning = page.wait_for_selector("ul.messagelist li.warning >> text=The stored key was removed")
    assert "give the key again" in warning.inner_text().lower()
    assert page.is_visible("text=Moved key stays disabled: Not an OpenAI-compatible endpoint")
    assert not page.is_visible("text=A key is stored (it is never shown)")
    screenshot(page, "catalogue-entry-key-removed-desktop")
    page.set_viewport_size(PHONE)
    screenshot(page, "catalogue-entry-key-removed-phone")
    page.set_viewport_size(DESKTOP)
    assert not live_app.api(staff_token, "get", "/api/v1/catalogue/moved-key").json()["api_key_stored"]
