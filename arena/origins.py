"""Which pages may open this site's WebSockets: the handshake's Origin against full origins.

Channels' AllowedHostsOriginValidator compares host names only (any scheme, any port) and so
let a page on http://127.0.0.1:8888, or http://arena.example.com:8080, open sockets with the
user's cookie. Here an Origin must equal one of the site's own origins, scheme, host and port:

- each loopback name of ALLOWED_HOSTS (localhost, 127.0.0.1, [::1]), only outside production,
  on the port the site is served on (PORT, default 8000; the launcher's uvicorn binds it): http
  only. Any other port of localhost is another web application (a dev server, a notebook, a
  page a local tool serves) and must not read a logged-in user's streams: loopback with any
  port was allowed until issue 39;
- each other name of ALLOWED_HOSTS (ARENA_ALLOWED_HOSTS) with the scheme the site is served on:
  https (port 443) in production; outside production also http on port 80 and on PORT;
- each of CSRF_TRUSTED_ORIGINS verbatim (how a site served on another port or scheme, or on
  subdomains (`https://*.example.com`), names itself: the same list Django's CSRF check trusts).

A handshake without an Origin is refused, as before (browsers always send one on a WebSocket;
a script must send one naming this site). `*` in ALLOWED_HOSTS names no origin.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier

LOOPBACK = {"localhost", "127.0.0.1", "::1"}
DEFAULT_PORTS = {"http": 80, "https": 443}


def _parts(origin: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) origin, lower-cased, default port filled in; None if it
    is no such origin (null, file://, a path or credentials in it, a bad port)."""
    try:
        url = urlsplit(origin.strip())
        port = url.port
    except ValueError:
        return None
    scheme, host = url.scheme.lower(), (url.hostname or "").lower()
    if scheme not in DEFAULT_PORTS or not host or url.username is not None or url.password is not None:
        return None
    if url.path not in ("", "/") or url.query or url.fragment:
        return None
    return scheme, host, port if port is not None else DEFAULT_PORTS[scheme]


def origin_allowed(origin: str | None, allowed_origins: Iterable[str]) -> bool:
    """Whether a WebSocket handshake's Origin header is one of `allowed_origins` (full
    scheme://host[:port] origins; `scheme://*.domain` matches that domain's subdomains, as in
    CSRF_TRUSTED_ORIGINS)."""
    if not origin:
        return False
    parts = _parts(origin)
    if parts is None:
        return False
    scheme, host, port = parts
    for allowed in allowed_origins:
        wildcard = "://*." in allowed
        want = _parts(allowed.replace("://*.", "://", 1) if wildcard else allowed)
        if want is None or (want[0], want[2]) != (scheme, port):
            continue
        if host == want[1] or (wildcard and host.endswith("." + want[1])):
            return True
    return False


def site_origins(allowed_hosts: Iterable[str], csrf_trusted_origins: Iterable[str], production: bool,
                 port: int | str = 8000) -> list[str]:
    """The full origins the site is served on, from its settings (see the module's docstring)."""
    origins = []
    for host in allowed_hosts:
        host = host.strip().lower()
        if not host or host == "*":
            continue  # `*` names no origin
        if host.strip("[]") in LOOPBACK:
            if not production:
                origins.append(f"http://{host}:{port}")  # this site's port only: not any local page
            continue
        names = [host[1:], f"*{host}"] if host.startswith(".") else [host]  # ".x": x and its subdomains
        for name in names:
            origins.append(f"https://{name}")
            if not production:
                origins += [f"http://{name}", f"http://{name}:{port}"]
    return origins + [o.strip() for o in csrf_trusted_origins if o.strip()]


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            try:
                return value.decode("latin1")
            except UnicodeDecodeError:
                return None
    return None


class OriginValidator:
    """ASGI middleware for the WebSocket router: a handshake whose Origin is not one of the
    site's origins is closed before any consumer runs (a plain close; the server answers 403)."""

    def __init__(self, application, allowed_origins: Iterable[str] | None = None):
        from django.conf import settings

        self.application = application
        if allowed_origins is None:
            allowed_origins = site_origins(settings.ALLOWED_HOSTS, settings.CSRF_TRUSTED_ORIGINS,
                                           settings.ARENA_PRODUCTION, settings.PORT)
        self.allowed_origins = list(allowed_origins)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not origin_allowed(_header(scope, b"origin"), self.allowed_origins):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
