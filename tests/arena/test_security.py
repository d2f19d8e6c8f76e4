"""Security of the web side: headers on every response, production settings that refuse a
development configuration, CSRF on every browser form, WebSockets that check their Origin
and session, and logs that never hold a password or a token."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import uuid
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client, override_settings
from django.urls import URLResolver, get_resolver, resolve

from arena import security
from arena.accounts.models import ApiToken
from arena.battles.models import Battle
from arena.history.models import ShareLink
from arena.tournaments.actions import start_tournament, stop_tournament
from tests.arena.api_client import api
from tests.arena.factories import generation
from tests.arena.socket_client import WebsocketCommunicator

ROOT = Path(__file__).resolve().parents[2]


# --- fixtures: one of everything an owner can open ------------------------------------------
@pytest.fixture
def staff(db):
    return get_user_model().objects.create_superuser("boss", password="boss-pass-123")


@pytest.fixture
def objects(owner, catalogue):
    gen = generation(owner, catalogue[0], text="**Blue.**")
    battle = Battle.objects.create(owner=owner, left=generation(owner, catalogue[0], text="**Blue.**"),
                                   right=generation(owner, catalogue[1], text="**Blue.**"))
    tournament = start_tournament(owner, contestants=catalogue[:4], prompt="Name a colour.", params={},
                                  seeding="given")
    link = ShareLink.share(owner, gen)
    ShareLink.share(owner, battle)
    return {"gen": gen, "battle": battle, "tournament": tournament, "link": link}


def owner_pages(objects) -> list[str]:
    return ["/playground/", "/compare/", "/tournaments/", "/tournaments/new/", "/leaderboard/", "/history/",
            "/history/comparisons/", "/history/tournaments/", "/history/shared/",
            objects["gen"].get_absolute_url(), objects["battle"].get_absolute_url(),
            objects["tournament"].get_absolute_url()]


# --- security headers -------------------------------------------------------------------------
def assert_security_headers(response, url):
    headers = response.headers
    csp = dict(part.strip().split(" ", 1) for part in headers.get("Content-Security-Policy", "").split(";"))
    assert csp.get("script-src") == "'self'", (url, csp)
    assert csp.get("object-src") == "'none'" and csp.get("base-uri") == "'none'", url
    assert csp.get("frame-ancestors") == "'none'" and csp.get("form-action") == "'self'", url
    assert csp.get("connect-src") == "'self'" and csp.get("default-src") == "'self'", url
    assert "unsafe-inline" not in csp["script-src"] + csp["style-src"] and "unsafe-eval" not in str(csp), url
    assert "camera=()" in headers.get("Permissions-Policy", "") and "microphone=()" in headers["Permissions-Policy"]
    assert headers.get("Cross-Origin-Opener-Policy") == "same-origin", url
    assert headers.get("Cross-Origin-Resource-Policy") == "same-origin", url
    assert headers.get("X-Content-Type-Options") == "nosniff", url
    assert headers.get("X-Frame-Options") == "DENY", url
    assert headers.get("Referrer-Policy") in ("same-origin", "no-referrer"), url


@pytest.mark.django_db
def test_every_kind_of_response_carries_the_security_headers(client, owner, staff, objects, token):
    client.force_login(owner)
    for url in owner_pages(objects):
        response = client.get(url)
        assert response.status_code == 200, url
        assert_security_headers(response, url)
    htmx = client.get("/history/", HTTP_HX_REQUEST="true")
    assert_security_headers(htmx, "htmx fragment")
    assert_security_headers(client.get("/history/export/generations.csv"), "export")
    assert_security_headers(client.get("/nowhere/"), "404")
    client.logout()
    for url in (objects["link"].get_absolute_url(), "/accounts/login/", "/playground/", "/api/v1/openapi.json",
                "/static/css/arena.css", "/static/js/arena.js", "/admin/login/"):
        response = client.get(url)
        assert response.status_code in (200, 302), url
        assert_security_headers(response, url)
    assert_security_headers(client.get("/healthz"), "healthz")  # 503 here: no orchestrator runs
    assert_security_headers(api(client, "get", "/api/v1/models", token), "api")
    assert_security_headers(api(client, "get", "/api/v1/models", "arena_wrong"), "api 401")
    assert_security_headers(api(client, "get", "/v1/models", token), "openai api")
    client.force_login(staff)
    assert_security_headers(client.get("/status/"), "worker status")
    assert_security_headers(client.get("/admin/"), "admin")


class InlineScriptFinder(HTMLParser):
    """What a strict Content-Security-Policy would block: inline scripts, handlers, javascript: URLs, <style>."""

    def __init__(self):
        super().__init__()
        self.blocked: list[str] = []
        self.scripts: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script":
            self.scripts.append(attrs.get("src") or "")
            if not attrs.get("src"):
                self.blocked.append("inline <script>")
        if tag == "style":
            self.blocked.append("<style> element")
        for name, value in attrs.items():
            if name.startswith(("on", "hx-on")):
                self.blocked.append(f"{tag} {name}")
            scheme_js = (value or "").strip().lower().startswith("javascript:")
            if name in ("href", "src", "action", "formaction") and scheme_js:
                self.blocked.append(f"{tag} {name}={value}")


@pytest.mark.django_db
def test_no_page_needs_inline_script(client, owner, staff, objects):
    """Every page works under the policy: scripts are files from this site, nothing inline."""
    client.force_login(owner)
    pages = owner_pages(objects)
    bodies = [client.get(url).content.decode() for url in pages]
    client.logout()
    bodies += [client.get(url).content.decode() for url in (objects["link"].get_absolute_url(), "/accounts/login/")]
    client.force_login(staff)
    bodies += [client.get(url).content.decode() for url in ("/status/", "/admin/", "/admin/catalogue/modelentry/")]
    for body in bodies:
        finder = InlineScriptFinder()
        finder.feed(body)
        assert finder.blocked == [], finder.blocked
        assert all(src.startswith("/") and not src.startswith("//") for src in finder.scripts), finder.scripts


@override_settings(DEBUG=True)
@pytest.mark.django_db
def test_debug_error_pages_keep_their_inline_styles(client, owner):
    """Only with DEBUG on, and only on error pages (Django's debug pages are inline-styled)."""
    response = client.get("/nowhere/")
    assert response.status_code == 404 and "Content-Security-Policy" not in response.headers
    assert "Permissions-Policy" in response.headers
    client.force_login(owner)
    assert "Content-Security-Policy" in client.get("/playground/").headers


# --- production settings ----------------------------------------------------------------------
GOOD_KEY = "k" + "x7Qp2LrT9vW4mZ8nB3cD6fH1jK5sA0yE-uI_oP4qR7tV2wX9zB3nM6cL8dF1gH4j"
SHOW = ("from django.conf import settings; import json; print(json.dumps({k: getattr(settings, k, None) for k in "
        "('DEBUG', 'SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE', 'SECURE_SSL_REDIRECT', 'SECURE_HSTS_SECONDS', "
        "'SECURE_PROXY_SSL_HEADER', 'ALLOWED_HOSTS')}))")


def start_settings(tmp_path, **env) -> subprocess.CompletedProcess:
    """Load arena.settings in a fresh process with these environment variables."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    full.update(ARENA_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="arena.settings", **env)
    return subprocess.run([sys.executable, "-c", SHOW], cwd=ROOT, env=full, text=True, capture_output=True,
                          timeout=120)


PRODUCTION = {"ARENA_PRODUCTION": "1", "ARENA_SECRET_KEY": GOOD_KEY, "ARENA_ALLOWED_HOSTS": "arena.example.com"}


@pytest.mark.parametrize("env, says", [
    ({"ARENA_DEBUG": "1"}, "ARENA_DEBUG is on"),
    ({"ARENA_SECRET_KEY": ""}, "ARENA_SECRET_KEY is not set"),
    ({"ARENA_SECRET_KEY": "changeme"}, "known default or too weak"),
    ({"ARENA_SECRET_KEY": "short-but-random-Qp2LrT9"}, "known default or too weak"),
    ({"ARENA_SECRET_KEY": "django-insecure-" + GOOD_KEY}, "known default or too weak"),
    ({"ARENA_SECRET_KEY": "a" * 80}, "known default or too weak"),
    ({"ARENA_ALLOWED_HOSTS": ""}, "lists no public host name"),
    ({"ARENA_ALLOWED_HOSTS": "localhost,127.0.0.1"}, "lists no public host name"),
    ({"ARENA_ALLOWED_HOSTS": "*"}, "contains '*'"),
], ids=["debug", "no key", "default key", "short key", "django-insecure", "one-letter key", "no hosts",
        "loopback only", "any host"])
def test_production_refuses_a_development_configuration(tmp_path, env, says):
    result = start_settings(tmp_path, **{**PRODUCTION, **env})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and says in result.stderr, result.stderr[-2000:]
    assert not (tmp_path / "secret_key").exists()  # a production process never invents its own key


def test_production_accepts_a_real_configuration_and_secures_cookies(tmp_path):
    import json

    result = start_settings(tmp_path, **PRODUCTION)
    assert result.returncode == 0, result.stderr[-2000:]
    shown = json.loads(result.stdout)
    assert shown["DEBUG"] is False and shown["SESSION_COOKIE_SECURE"] and shown["CSRF_COOKIE_SECURE"]
    assert shown["SECURE_SSL_REDIRECT"] and shown["SECURE_HSTS_SECONDS"] >= 3600
    assert shown["SECURE_PROXY_SSL_HEADER"] is None  # trusting X-Forwarded-Proto is opt-in
    assert "arena.example.com" in shown["ALLOWED_HOSTS"]
    behind = json.loads(start_settings(tmp_path, **PRODUCTION, ARENA_BEHIND_PROXY="1").stdout)
    assert behind["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]


def test_development_mode_starts_as_before(tmp_path):
    import json

    result = start_settings(tmp_path, ARENA_DEBUG="1")
    assert result.returncode == 0, result.stderr[-2000:]
    shown = json.loads(result.stdout)
    assert shown["DEBUG"] is True and not shown["SESSION_COOKIE_SECURE"] and not shown["SECURE_SSL_REDIRECT"]


def test_production_passes_djangos_deployment_check(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env.update(ARENA_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="arena.settings", **PRODUCTION)
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy"],
                            cwd=ROOT, env=env, text=True, capture_output=True, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    # What only the operator can decide: HSTS for every subdomain, and the browsers' preload list.
    assert set(re.findall(r"\((security\.W\d+)\)", result.stdout + result.stderr)) <= {"security.W005", "security.W021"}


def test_production_problems_name_what_to_set():
    assert security.production_problems(debug=False, secret_key=GOOD_KEY, allowed_hosts=["arena.example.com"]) == []
    problems = security.production_problems(debug=True, secret_key="", allowed_hosts=["localhost", "[::1]"])
    assert len(problems) == 3 and all("ARENA_" in problem for problem in problems)


# --- CSRF on every form -----------------------------------------------------------------------
BEARER_PREFIXES = ("api/v1/", "v1/")  # token-authenticated: no cookie is read, so no CSRF


def all_patterns(patterns=None, prefix=""):
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            yield from all_patterns(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern), pattern


def sample_path(route: str) -> str:
    """A concrete path the route matches: converters and regex groups get sample values."""
    path = re.sub(r"<uuid:\w+>", str(uuid.uuid4()), route)
    path = re.sub(r"<int:\w+>", "1", path)
    path = re.sub(r"<(?:str|slug|path):\w+>", "x", path)
    path = re.sub(r"\(\?P<\w+>\.\*\)", "x", path)
    path = re.sub(r"\(\?P<\w+>(\w+)(?:\|\w+)*\)", r"\1", path)  # an alternation: its first word
    return "/" + path.replace("^", "").replace("$", "").replace("\\.", ".")


def test_sample_paths_cover_every_pattern():
    for route, pattern in all_patterns():
        match = resolve(sample_path(route))
        assert match.func == pattern.callback or route.endswith((".*)$", ".*)")), (route, sample_path(route))


@pytest.mark.django_db
def test_every_browser_url_refuses_a_post_without_a_csrf_token(staff):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(staff)  # the most a session can do: staff reach the admin too
    checked = 0
    for route, pattern in all_patterns():
        path = sample_path(route)
        response = browser.post(path, {"prompt": "x"})
        if getattr(pattern.callback, "csrf_exempt", False):
            # Exempt only where a session cookie gets nothing: the APIs, which want a bearer token.
            assert route.lstrip("^").startswith(BEARER_PREFIXES), route
            assert response.status_code in (401, 404, 405), (path, response.status_code)
            continue
        assert response.status_code == 403 and b"CSRF" in response.content, (path, response.status_code)
        checked += 1
    assert checked >= 40


@pytest.mark.django_db
def test_a_post_with_the_token_goes_through(owner):
    browser = Client(enforce_csrf_checks=True)
    page = browser.get("/accounts/login/").content.decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    response = browser.post("/accounts/login/", {"username": "owner", "password": "owner-pass-1",
                                                 "csrfmiddlewaretoken": csrf})
    assert response.status_code == 302
    page = browser.get("/playground/").content.decode()
    header_token = re.search(r'hx-headers=\'\{"X-CSRFToken": "([^"]+)"\}\'', page).group(1)
    response = browser.post("/accounts/logout/", HTTP_X_CSRFTOKEN=header_token)  # as htmx sends it
    assert response.status_code == 302


class FormFinder(HTMLParser):
    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []
        self.body_headers = ""

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "body":
            self.body_headers = attrs.get("hx-headers") or ""
        if tag == "form":
            self.forms.append({**attrs, "fields": {}})
        if tag in ("input", "textarea", "select", "button") and self.forms and attrs.get("name"):
            self.forms[-1]["fields"][attrs["name"]] = attrs.get("value") or ""


@pytest.mark.django_db
def test_every_rendered_form_that_posts_carries_the_csrf_token(client, owner, staff, objects, catalogue):
    stopped = start_tournament(owner, contestants=catalogue[:4], prompt="Stop me.", params={}, seeding="given")
    stop_tournament(stopped)
    client.force_login(owner)
    pages = [*owner_pages(objects), stopped.get_absolute_url()]
    rendered = {url: client.get(url).content.decode() for url in pages}
    client.force_login(staff)
    rendered.update({url: client.get(url).content.decode() for url in ("/status/", "/admin/")})
    client.logout()
    rendered["/accounts/login/"] = client.get("/accounts/login/").content.decode()
    posting = 0
    for url, html in rendered.items():
        finder = FormFinder()
        finder.feed(html)
        for form in finder.forms:
            if "ws-send" in form:
                continue  # sent over the page's WebSocket, which checks its Origin and session
            if (form.get("method") or "get").lower() == "post":
                posting += 1
                assert form["fields"].get("csrfmiddlewaretoken"), (url, form)
            if form.get("hx-post"):
                assert '"X-CSRFToken": "' in finder.body_headers, url  # htmx sends the body's token
        if "ws-connect" in html or "hx-post" in html:
            assert re.search(r'"X-CSRFToken": "\w{32,}"', finder.body_headers), url
    assert posting >= 15


# --- WebSockets: Origin and session -----------------------------------------------------------
async def socket(path: str, origin: str | None, session: str | None):
    from arena.asgi import application  # the whole stack: origin validator, session auth, router

    headers = [(b"host", b"127.0.0.1:8000")]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if session:
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={session}".encode()))
    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await comm.connect(timeout=5)
    if connected:
        await comm.disconnect()
    return connected, code


def session_of(client, user) -> str:
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


@pytest.mark.django_db(transaction=True)
def test_sockets_check_origin_and_session(client, owner, outsider, staff, catalogue):
    from asgiref.sync import async_to_sync

    gen = generation(owner, catalogue[0], text="**Blue.**")
    battle = Battle.objects.create(owner=owner, left=generation(owner, catalogue[0], text="**Blue.**"),
                                   right=generation(owner, catalogue[1], text="**Blue.**"))
    tournament = start_tournament(owner, contestants=catalogue[:4], prompt="Name a colour.", params={},
                                  seeding="given")
    match_battle = tournament.current_match().battle
    owners, outsiders, staffs = session_of(client, owner), session_of(Client(), outsider), session_of(Client(), staff)
    paths = [f"/ws/generations/{gen.id}/", f"/ws/battles/{battle.id}/", f"/ws/battles/{match_battle.id}/"]
    run = async_to_sync(socket)
    for path in paths:
        assert run(path, "http://127.0.0.1:8000", owners)[0], path  # the owner, from this site
        assert run(path, "http://localhost:8000", owners)[0], path  # any loopback name of ALLOWED_HOSTS
        # Another site's page cannot open the owner's socket with the owner's cookie (refused before
        # any consumer runs: a plain close), nor can another local web application (another port
        # of this machine: issue 39)...
        for origin in ("http://evil.example", "https://127.0.0.1.evil.example", "http://localhost.evil.example",
                       "null", "file://", "http://127.0.0.1:9999", "http://localhost", "http://[::1]:3000"):
            assert run(path, origin, owners) == (False, 1000), (path, origin)
        # ...nor can a client that sends no Origin at all (browsers always send one on a WebSocket).
        assert run(path, None, owners) == (False, 1000), path
        # From this site, but anonymous or someone else: the same refusal as a socket that is not there.
        assert run(path, "http://127.0.0.1:8000", None) == (False, 4404), path
        assert run(path, "http://127.0.0.1:8000", "not-a-session") == (False, 4404), path
        assert run(path, "http://127.0.0.1:8000", outsiders) == (False, 4404), path
    assert run("/ws/status/", "http://127.0.0.1:8000", staffs)[0]
    assert run("/ws/status/", "http://127.0.0.1:8000", owners) == (False, 4403)
    assert run("/ws/status/", "http://evil.example", staffs) == (False, 1000)


# --- logs: no password, no token ----------------------------------------------------------------
def logged_text(caplog) -> str:
    parts = []
    for record in caplog.records:
        parts += [record.getMessage(), str(record.args), record.exc_text or "", str(getattr(record, "request", ""))]
        if record.exc_info:
            parts.append(logging.Formatter().formatException(record.exc_info))
    return "\n".join(parts)


@override_settings(DEBUG=True)  # with DEBUG on, Django also logs every SQL query and its parameters
@pytest.mark.django_db
def test_no_password_or_token_is_ever_logged(client, owner, catalogue, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="django")  # Django's own loggers stop at INFO by default
    secrets_seen = ["owner-pass-1", "wrong-pass-Zq9"]
    # Logging in, right and wrong (the wrong one could be someone's password for another site).
    assert client.post("/accounts/login/", {"username": "owner", "password": "wrong-pass-Zq9"}).status_code == 200
    assert client.post("/accounts/login/", {"username": "owner", "password": "owner-pass-1"}).status_code == 302
    # A password change through the admin's form handling is the same hashers: set_password.
    owner.set_password("new-pass-Kx7w")
    owner.save()
    secrets_seen.append("new-pass-Kx7w")
    # API calls with a good and a bad token, JSON and OpenAI-compatible, good and bad requests.
    token = ApiToken.issue(owner)
    bad = "arena_" + "Y" * 43
    secrets_seen += [token, bad]
    for credential in (token, bad):
        api(client, "get", "/api/v1/models", credential)
        api(client, "post", "/api/v1/generations", credential, {"model": "no-such-model", "prompt": "x"})
        api(client, "post", "/api/v1/generations", credential, raw="{not json")
        api(client, "get", "/v1/models", credential)
        api(client, "post", "/v1/chat/completions", credential, {"model": "no-such-model", "messages": []})
        client.get("/api/v1/models", HTTP_AUTHORIZATION=f"Token {credential}")  # the wrong scheme
    # Tokens made on the command line go to the terminal, once, and nowhere else.
    call_command("arena_token", "scripted", "--create-service-account")
    printed = capfd.readouterr()
    made = printed.out.strip().splitlines()[-1]
    assert made.startswith("arena_") and printed.out.count(made) == 1 and made not in printed.err
    secrets_seen.append(made)
    # The first run's admin password: printed once for the person starting it, kept in a private file.
    call_command("ensure_admin")
    printed = capfd.readouterr()
    password = re.search(r"password: (\S+)", printed.out).group(1)
    assert printed.out.count(password) == 1 and password not in printed.err
    key_file = settings.DATA_DIR / "admin-password.txt"
    assert key_file.read_text().strip() == password and oct(key_file.stat().st_mode & 0o777) == "0o600"
    secrets_seen.append(password)

    logged = logged_text(caplog)
    assert len(caplog.records) > 5 and "SELECT" in logged  # the logs did capture: queries, 4xx warnings
    leaked = [secret for secret in secrets_seen if secret in logged]
    assert leaked == []
