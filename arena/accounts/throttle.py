"""Login throttling (django-axes, configured in arena/settings.py): failed logins are counted per
username (from any address) and per client address (for any username); after
ARENA_LOGIN_FAILURE_LIMIT failures either is locked out, the right password included, until
ARENA_LOGIN_COOLOFF_MIN minutes pass without another failure. What is ours: the client address
(behind a proxy, the one the proxy saw), the lockout page, and what a success resets. A wrong old
password on the password change page counts too (arena/accounts/passwords.py)."""

from __future__ import annotations

import math

from django.conf import settings
from django.shortcuts import render


def client_address(request) -> str:
    """The client's address: REMOTE_ADDR; with ARENA_BEHIND_PROXY=1, the last X-Forwarded-For entry
    (the one the proxy in front of the app appended: anything before it, the client could have
    written itself)."""
    if settings.ARENA_BEHIND_PROXY:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        if forwarded and forwarded[-1]:
            return forwarded[-1]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def cool_off_s() -> int:
    return math.ceil(settings.AXES_COOLOFF_TIME.total_seconds())


def locked_out(request, original_response=None, credentials=None):
    """The page a locked-out login gets: 429, saying how long to wait, with Retry-After."""
    minutes = math.ceil(cool_off_s() / 60)
    response = render(request, "registration/locked_out.html",
                      {"failure_limit": settings.AXES_FAILURE_LIMIT, "minutes": minutes}, status=429)
    response["Retry-After"] = str(cool_off_s())
    return response


def reset_on_success(sender, request, user, **kwargs):
    """A successful login clears the failures against that username. Only those: clearing the
    address's too (axes' AXES_RESET_ON_SUCCESS) would let anyone with an account of their own
    wipe the count of their guesses at someone else's password by logging in between them."""
    from axes.utils import reset

    reset(username=user.get_username())
