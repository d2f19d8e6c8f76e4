"""Login throttling: the rule is arena/accounts/login_policy.py (pure); here, where its failures
live (Redis, under the installation's prefix), who the client is, and the Django glue.

Why our own and no longer django-axes (issue 39): axes locks a username after N failures from
anywhere and an address after N failures at any username, one limit for both, and refuses the
right password until the cool-off, each further try restarting it. Five wrong passwords from
anyone locked anyone out, admin included. Axes has no per-(username, address) count with a
growing delay, no separate limits per count, and no notion of a browser known to the account.

The glue, every authenticate() included (the login page, the admin's, the password change):
- `ThrottleBackend`, first in AUTHENTICATION_BACKENDS, asks the policy before any password is
  checked; a held try raises PermissionDenied (Django then tries no other backend) and is not
  counted, so waiting is all it takes;
- `user_login_failed` counts a failure, `user_logged_in` clears this client's own count and
  marks the browser trusted for that account: a signed cookie (DEVICE_COOKIE) holding a random
  browser id and, per account, a digest of its password hash (a password change, by anyone,
  ends the trust of every browser);
- `LoginThrottleMiddleware` (last) answers a held try with the 429 page (Retry-After) and sets
  the trusted-browser cookie after a login.
Staff clear the counts of a username or an address with `manage.py arena_unlock`.
If Redis does not answer, logins go ahead unthrottled (logged): the throttle must not be what
keeps everyone out."""

from __future__ import annotations

import hashlib
import logging
import math
import secrets
import time
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.exceptions import PermissionDenied
from django.shortcuts import render
from django.utils.crypto import constant_time_compare

from arena import streams

from .login_policy import ADDRESS, ALLOWED, PAIR, USERNAME, Failures, Policy, Verdict, decide

log = logging.getLogger(__name__)
CLOCK: Callable[[], float] = time.time  # the throttle's clock (tests set their own)
DEVICE_COOKIE = "arena_trusted_browser"
DEVICE_SALT = "arena.accounts.throttle.trusted-browser"
MAX_TRUSTED_ACCOUNTS = 10  # per browser: the most recently used ones
REFUSED = "arena_login_refused"  # request attribute: the Verdict of a held try
TRUST = "arena_login_trust"  # request attribute: the user who just logged in from this browser

# What the lockout page says, by the count that holds the try (templates/registration/locked_out.html).
HELD_BECAUSE = {
    PAIR: "There were several wrong passwords for this account from here: each one more makes the next "
          "try wait longer (at most {max_wait}).",
    ADDRESS: "Too many wrong passwords came from your network address in the last {window}, for one or "
             "more accounts.",
    USERNAME: "This account had too many wrong passwords from many places in the last {window}. A browser "
              "that has logged in to it before is not held up by them: log in from one of yours.",
}


def client_address(request) -> str:
    """The client's address: REMOTE_ADDR; with ARENA_BEHIND_PROXY=1, the last X-Forwarded-For entry
    (the one the proxy in front of the app appended: anything before it, the client could have
    written itself)."""
    if settings.ARENA_BEHIND_PROXY:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        if forwarded and forwarded[-1]:
            return forwarded[-1]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def policy() -> Policy:
    return Policy(free_failures=settings.ARENA_LOGIN_FREE_FAILURES, max_delay_s=settings.ARENA_LOGIN_MAX_DELAY_S,
                  address_limit=settings.ARENA_LOGIN_ADDRESS_LIMIT, username_limit=settings.ARENA_LOGIN_USERNAME_LIMIT,
                  window_s=settings.ARENA_LOGIN_WINDOW_MIN * 60)


def _digest(text: str) -> str:
    """Keys name no username or address (and stay short whatever the client sent)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _user_digest(username: str) -> str:
    """One count for every spelling of a username that a case-insensitive lookup (a database
    collation, a custom backend) could take for the same account: "Admin" counts as "admin"."""
    return _digest(unicodedata.normalize("NFKC", username).casefold())


@dataclass(frozen=True)
class Attempt:
    """Who tries: a username, from an address, through a trusted browser (its id) or not ("")."""

    username: str
    address: str
    browser: str = ""

    @property
    def client(self) -> str:
        return f"browser:{self.browser}" if self.browser else f"address:{self.address}"


class LoginThrottle:
    """The failure counts in Redis: one sorted set per count, members scored by their time."""

    def __init__(self, client: redis.Redis, base: str, rule: Policy, clock: Callable[[], float]):
        self.redis, self.base, self.rule, self.clock = client, base, rule, clock

    def pair_key(self, username: str, client: str) -> str:
        return f"{self.base}:pair:{_user_digest(username)}:{_digest(client)}"

    def address_key(self, address: str) -> str:
        return f"{self.base}:address:{_digest(address)}"

    def username_key(self, username: str) -> str:
        return f"{self.base}:username:{_user_digest(username)}"

    def _keys(self, attempt: Attempt) -> list[str]:
        """The counts an attempt reads and adds to: a trusted browser's own pair only."""
        pair = self.pair_key(attempt.username, attempt.client)
        if attempt.browser:
            return [pair]
        return [pair, self.address_key(attempt.address), self.username_key(attempt.username)]

    def check(self, attempt: Attempt) -> Verdict:
        now = self.clock()
        pipe = self.redis.pipeline(transaction=False)
        for key in self._keys(attempt):
            pipe.zrangebyscore(key, now - self.rule.window_s, "+inf", withscores=True)
        counts = [[score for _member, score in found] for found in pipe.execute()]
        failures = Failures(*counts)
        return decide(failures, now, self.rule, trusted=bool(attempt.browser))

    def fail(self, attempt: Attempt) -> None:
        now = self.clock()
        member = f"{now:.6f}:{uuid.uuid4().hex[:12]}"
        pipe = self.redis.pipeline(transaction=False)
        for key in self._keys(attempt):
            pipe.zadd(key, {member: now})
            pipe.zremrangebyscore(key, "-inf", now - self.rule.window_s)
            pipe.expire(key, math.ceil(self.rule.window_s) + 1)
        pipe.execute()

    def succeed(self, username: str, clients: list[str]) -> None:
        """A login: these clients' own counts for the username start again (the address's and the
        username's do not: they count everyone's guesses, and one success must not wipe them)."""
        self.redis.delete(*[self.pair_key(username, client) for client in clients])

    def unlock(self, username: str | None = None, address: str | None = None) -> int:
        """Clear a username's counts (from every client) and/or an address's (at every username)."""
        keys: list[bytes | str] = []
        if username is not None:
            keys += [self.username_key(username),
                     *self.redis.scan_iter(match=f"{self.base}:pair:{_user_digest(username)}:*", count=1000)]
        if address is not None:
            keys += [self.address_key(address),
                     *self.redis.scan_iter(match=f"{self.base}:pair:*:{_digest(f'address:{address}')}", count=1000)]
        return int(self.redis.delete(*keys)) if keys else 0


def current() -> LoginThrottle:
    return LoginThrottle(streams.client(), streams.keys().login_failures(), policy(), CLOCK)


# --- trusted browsers ------------------------------------------------------------------------
def _proof(user) -> str:
    """Changes with the user's password (Django's session hash is an HMAC of the password hash)."""
    return user.get_session_auth_hash()[:32]


def _browser_cookie(request) -> dict:
    """{"b": browser id, "a": {username: proof}} from a valid cookie; {} without one."""
    raw = request.COOKIES.get(DEVICE_COOKIE)
    if not raw:
        return {}
    try:
        value = signing.loads(raw, salt=DEVICE_SALT, max_age=settings.ARENA_LOGIN_TRUSTED_DAYS * 86400)
    except signing.BadSignature:
        return {}
    ok = isinstance(value, dict) and isinstance(value.get("b"), str) and isinstance(value.get("a"), dict)
    return value if ok else {}


def trusted_browser(request, username: str) -> str:
    """This browser's id when it logged in to `username` since the account's password last changed; else ""."""
    cookie = _browser_cookie(request)
    proof = cookie.get("a", {}).get(username)
    if not isinstance(proof, str):
        return ""
    user = get_user_model()._default_manager.filter(**{get_user_model().USERNAME_FIELD: username}).first()
    return cookie["b"] if user is not None and constant_time_compare(proof, _proof(user)) else ""


def attempt_for(request, username: str) -> Attempt:
    cache = request.__dict__.setdefault("_arena_login_attempts", {})  # one cookie check per request
    if username not in cache:
        cache[username] = Attempt(username, client_address(request), trusted_browser(request, username))
    return cache[username]


def remember_browser(request, response, user) -> None:
    cookie = _browser_cookie(request) or {"b": secrets.token_urlsafe(16), "a": {}}
    accounts = {name: proof for name, proof in cookie["a"].items() if name != user.get_username()}
    accounts[user.get_username()] = _proof(user)  # the newest last: the oldest go first past the cap
    cookie["a"] = dict(list(accounts.items())[-MAX_TRUSTED_ACCOUNTS:])
    response.set_cookie(DEVICE_COOKIE, signing.dumps(cookie, salt=DEVICE_SALT, compress=True),
                        max_age=settings.ARENA_LOGIN_TRUSTED_DAYS * 86400, httponly=True, samesite="Lax",
                        secure=settings.SESSION_COOKIE_SECURE)


# --- the Django glue -------------------------------------------------------------------------
def check(request, username: str) -> Verdict:
    """The policy's verdict on this request's try at `username` (Redis silent: allowed, logged)."""
    try:
        return current().check(attempt_for(request, username))
    except redis.RedisError:
        log.warning("Login throttle not checked: Redis did not answer")
        return ALLOWED


class ThrottleBackend:
    """First in AUTHENTICATION_BACKENDS: a held try stops here, before any password is checked.
    Only `authenticate`: no get_user (Django's force_login and sessions take the first backend
    that has one, which must stay ModelBackend) and no permissions."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None or not isinstance(username, str):
            return None  # authenticate() outside a request (a management command): nothing to throttle
        verdict = check(request, username)
        if not verdict.allowed:
            setattr(request, REFUSED, verdict)
            raise PermissionDenied  # Django stops trying backends and sends user_login_failed
        return None


def on_login_failed(sender, credentials, request=None, **kwargs):
    username = credentials.get("username")
    if request is None or getattr(request, REFUSED, None) is not None or not isinstance(username, str):
        return  # a held try is no new failure: waiting is all it takes
    try:
        current().fail(attempt_for(request, username))
    except redis.RedisError:
        log.warning("Failed login not counted: Redis did not answer")


def on_logged_in(sender, request, user, **kwargs):
    if request is None:
        return
    username = user.get_username()
    clients = [f"address:{client_address(request)}"]
    if browser := _browser_cookie(request).get("b"):
        clients.append(f"browser:{browser}")
    try:
        current().succeed(username, clients)
    except redis.RedisError:
        log.warning("Login throttle not reset: Redis did not answer")
    setattr(request, TRUST, user)


def wait_words(seconds: float) -> str:
    if seconds < 90:
        n = max(1, math.ceil(seconds))
        return f"{n} second{'s' if n != 1 else ''}"
    minutes = math.ceil(seconds / 60)
    return f"{minutes} minutes"


def locked_out(request, verdict: Verdict):
    """The page a held login gets: 429, how long to wait and why, with Retry-After."""
    explanation = HELD_BECAUSE.get(verdict.reason, HELD_BECAUSE[PAIR]).format(
        max_wait=wait_words(settings.ARENA_LOGIN_MAX_DELAY_S), window=wait_words(settings.ARENA_LOGIN_WINDOW_MIN * 60))
    response = render(request, "registration/locked_out.html",
                      {"wait": wait_words(verdict.retry_after_s), "explanation": explanation, "reason": verdict.reason},
                      status=429)
    response["Retry-After"] = str(max(1, math.ceil(verdict.retry_after_s)))
    return response


class LoginThrottleMiddleware:
    """Last in MIDDLEWARE: a held try's response becomes the lockout page; a login's response
    carries the trusted-browser cookie."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        verdict = getattr(request, REFUSED, None)
        if verdict is not None:
            return locked_out(request, verdict)
        user = getattr(request, TRUST, None)
        if user is not None:
            remember_browser(request, response, user)
        return response
