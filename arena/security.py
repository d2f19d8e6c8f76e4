"""Security headers on every response (pages, fragments, the APIs, static files).

Django's SecurityMiddleware already sends nosniff, Referrer-Policy and
Cross-Origin-Opener-Policy, and XFrameOptionsMiddleware X-Frame-Options: DENY (settings).
This adds what Django does not: a Content-Security-Policy that runs only this site's own
script files (so even an answer that slipped past arena.markdown could run nothing), a
Permissions-Policy and a Cross-Origin-Resource-Policy. The pages carry no inline script or
handler for this reason: behaviour lives in static/js/arena.js.
"""

from __future__ import annotations

from django.conf import settings
from django.utils.deprecation import MiddlewareMixin

CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self'",  # htmx, its ws extension and arena.js from /static/: no inline script, no eval
    "style-src 'self'",
    # Style attributes only (no <style> element): the leaderboard's heat map and a Markdown
    # table's column alignment. They can restyle, never run anything.
    "style-src-attr 'unsafe-inline'",
    "img-src 'self'",
    "font-src 'self'",
    "connect-src 'self'",  # htmx requests and the WebSockets (ws:/wss: of this host match 'self')
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "form-action 'self'",
])

PERMISSIONS_POLICY = ", ".join(f"{feature}=()" for feature in (
    "accelerometer", "autoplay", "camera", "display-capture", "geolocation", "gyroscope", "magnetometer",
    "microphone", "midi", "payment", "usb", "xr-spatial-tracking",
))

HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Permissions-Policy": PERMISSIONS_POLICY,
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    # Django sends these two as well, but not on static files (WhiteNoise answers before its middleware).
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}


class SecurityHeadersMiddleware(MiddlewareMixin):
    """Adds HEADERS to every response that does not set its own (sync and async alike)."""

    def process_response(self, request, response):
        for name, value in HEADERS.items():
            if name == "Content-Security-Policy" and settings.DEBUG and response.status_code >= 400:
                continue  # Django's debug error pages are made of inline style and script
            response.headers.setdefault(name, value)
        return response


# --- production mode (ARENA_PRODUCTION=1, checked by arena/settings.py) ----------------------
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}
# Keys that are public: Django's startproject prefix, placeholders from examples and tutorials.
KNOWN_DEFAULT_KEYS = {"changeme", "change-me", "change_me", "secret", "secret-key", "secretkey", "dev", "development",
                      "insecure", "test", "django", "arena", "llm-arena", "your-secret-key", "please-change-me"}
MIN_SECRET_KEY_LENGTH = 50  # as Django's own deployment check (security.W009)


def production_problems(*, debug: bool, secret_key: str, allowed_hosts: list[str]) -> list[str]:
    """What stops this configuration from running in production, each saying what to set."""
    problems = []
    if debug:
        problems.append("ARENA_DEBUG is on: unset it (debug pages show settings and code to anyone).")
    key = secret_key.strip()
    if not key:
        problems.append("ARENA_SECRET_KEY is not set: set it to a long random value, the same for every process, "
                        "e.g. python -c 'import secrets; print(secrets.token_urlsafe(50))'.")
    elif (key.lower() in KNOWN_DEFAULT_KEYS or key.startswith("django-insecure-")
          or len(key) < MIN_SECRET_KEY_LENGTH or len(set(key)) < 5):
        problems.append(f"ARENA_SECRET_KEY is a known default or too weak: use at least {MIN_SECRET_KEY_LENGTH} "
                        "random characters, e.g. python -c 'import secrets; print(secrets.token_urlsafe(50))'.")
    public = [host for host in allowed_hosts if host not in LOOPBACK_HOSTS]
    if "*" in public:
        problems.append("ARENA_ALLOWED_HOSTS contains '*': name the site's host names (any host would also let any "
                        "web page's WebSocket in: sockets check their Origin against these names).")
    elif not public:
        problems.append("ARENA_ALLOWED_HOSTS lists no public host name: set it to the name(s) the site is served "
                        "under, comma-separated, e.g. arena.example.com.")
    return problems
