"""The WebSocket Origin check (arena/origins.py): full origins; loopback only outside production and
only on the port the site is served on (PORT)."""

import pytest
from asgiref.sync import async_to_sync
from channels.generic.websocket import AsyncWebsocketConsumer

from arena.origins import OriginValidator, origin_allowed, site_origins
from tests.arena.socket_client import WebsocketCommunicator

HOSTS = ["127.0.0.1", "localhost", "[::1]", "arena.example.com"]
PROD = site_origins(HOSTS, [], production=True)
DEV = site_origins(HOSTS, [], production=False, port=8000)


def test_site_origins_are_full_origins():
    assert PROD == ["https://arena.example.com"]
    assert set(DEV) == {"http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000",
                        "https://arena.example.com", "http://arena.example.com", "http://arena.example.com:8000"}
    assert site_origins(["*"], [], production=False) == []  # `*` names no origin
    assert site_origins(["arena.example.com"], ["https://arena.example.com:8443"], production=True) == [
        "https://arena.example.com", "https://arena.example.com:8443"]
    assert site_origins([".example.com"], [], production=True) == ["https://example.com", "https://*.example.com"]


@pytest.mark.parametrize("origin", ["https://arena.example.com", "https://ARENA.example.com",
                                    "https://arena.example.com:443", "https://arena.example.com/"])
def test_the_sites_own_origin_is_accepted(origin):
    assert origin_allowed(origin, PROD)


@pytest.mark.parametrize("origin", [
    "http://arena.example.com",  # wrong scheme
    "https://arena.example.com:8443",  # wrong port
    "http://arena.example.com:8000",  # the dev server's origin, in production
    "https://evil.example", "https://arena.example.com.evil.example", "https://evil-arena.example.com",
    "https://sub.arena.example.com",  # a subdomain is another origin
    "http://127.0.0.1:8888", "http://localhost", "https://[::1]:8000",  # loopback, in production
    "null", "file://", "", None, "https://user@arena.example.com", "https://arena.example.com/page",
    "ws://arena.example.com", "https://arena.example.com:notaport",
])
def test_other_origins_are_refused_in_production(origin):
    assert not origin_allowed(origin, PROD)


def test_outside_production_loopback_pages_on_this_sites_port_only():
    """Another port of localhost is another local web application (issue 39: a page on
    http://127.0.0.1:9999 read a logged-in user's stream): refused."""
    for origin in ("http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000", "http://LOCALHOST:8000/",
                   "http://arena.example.com:8000", "http://arena.example.com", "https://arena.example.com"):
        assert origin_allowed(origin, DEV), origin
    for origin in ("http://127.0.0.1:9999", "http://127.0.0.1:8888", "http://localhost", "http://[::1]:3000",
                   "https://localhost:8443", "https://127.0.0.1:8000", "http://127.0.0.1", "http://127.0.0.2:8000",
                   "http://arena.example.com:8080", "http://127.0.0.1.evil.example", "http://localhost.evil.example",
                   "null", None):
        assert not origin_allowed(origin, DEV), origin


def test_a_port_change_follows():
    moved = site_origins(HOSTS, [], production=False, port="9000")
    assert origin_allowed("http://127.0.0.1:9000", moved) and origin_allowed("http://localhost:9000", moved)
    assert not origin_allowed("http://127.0.0.1:8000", moved) and not origin_allowed("http://localhost:8000", moved)


def test_csrf_trusted_origins_verbatim_and_wildcards():
    allowed = site_origins(["arena.example.com"], ["https://*.example.org", "http://arena.example.com:8080"], True)
    assert origin_allowed("https://a.example.org", allowed)
    assert origin_allowed("https://b.a.example.org", allowed)
    assert not origin_allowed("https://example.org.evil.example", allowed)
    assert not origin_allowed("http://a.example.org", allowed)
    assert origin_allowed("http://arena.example.com:8080", allowed)
    assert not origin_allowed("http://arena.example.com", allowed)
    # and a loopback page on another port, when named: the one way to let it in
    dev = site_origins(["127.0.0.1"], ["http://127.0.0.1:5173"], False, 8000)
    assert origin_allowed("http://127.0.0.1:5173", dev) and not origin_allowed("http://127.0.0.1:5174", dev)


class Echo(AsyncWebsocketConsumer):
    async def connect(self):
        await self.accept()


async def handshake(app, origin):
    headers = [(b"host", b"arena.example.com")] + ([(b"origin", origin.encode())] if origin else [])
    comm = WebsocketCommunicator(app, "/ws/x/", headers=headers)
    connected, code = await comm.connect(timeout=5)
    if connected:
        await comm.disconnect()
    return connected, code


@pytest.mark.django_db  # a consumer closes old database connections
@pytest.mark.parametrize("production", [True, False])
def test_the_middleware_closes_a_refused_handshake_before_the_consumer(production):
    app = OriginValidator(Echo.as_asgi(), site_origins(["127.0.0.1", "arena.example.com"], [], production, 8000))
    run = async_to_sync(handshake)
    assert run(app, "https://arena.example.com")[0]
    for origin in ("http://evil.example", "https://arena.example.com:8443", None, "http://127.0.0.1:8888"):
        assert run(app, origin) == (False, 1000), origin
    # the site's own loopback origin: only outside production
    assert run(app, "http://127.0.0.1:8000")[0] is (not production)
    if production:
        assert run(app, "http://arena.example.com") == (False, 1000)  # plain http: wrong scheme


@pytest.mark.django_db
def test_by_default_the_validator_follows_the_port_setting(settings):
    """OriginValidator() reads ALLOWED_HOSTS, CSRF_TRUSTED_ORIGINS and PORT (what the launcher
    serves on): `PORT=9123 make run` lets the site's pages in on 9123 and nothing else on loopback."""
    settings.PORT, settings.ARENA_PRODUCTION = "9123", False
    app = OriginValidator(Echo.as_asgi())
    run = async_to_sync(handshake)
    assert run(app, "http://127.0.0.1:9123")[0] and run(app, "http://localhost:9123")[0]
    for origin in ("http://127.0.0.1:8000", "http://127.0.0.1:9999", "http://localhost"):
        assert run(app, origin) == (False, 1000), origin


def test_the_application_uses_the_full_origin_check():
    from arena.asgi import application

    validator = application.application_mapping["websocket"]
    assert isinstance(validator, OriginValidator)
