"""Where an endpoint's key may go, one rule for the admin form and the staff API (forms.StoredKeyForm,
ModelEntry.clean): a stored key only to the origin (scheme, host, port) it was given for, a key
variable only if it is named ARENA_ENDPOINT_KEY_<NAME> (inference.config.KEY_VARIABLE_PREFIX).

No Django here. URLs are read by httpx, the client that sends the key (the check and the worker's
adapter), so the host compared is the host it would connect to: `http://a.example@b.example/`
is b.example to both.
"""

from __future__ import annotations

import contextlib
import ipaddress

import httpx

from inference.config import KEY_VARIABLE_PREFIX

DEFAULT_PORTS = {"http": 80, "https": 443}

KEY_DROPPED_CODE = "api_key_dropped"
KEY_DROPPED = ("The stored key was removed: it was given for the old base URL's host, and a stored key goes only to "
               "the host it was given for. Give the key again with the new base URL if that host should get it.")
KEY_VARIABLE_CODE = "key_variable_not_allowed"
KEY_VARIABLE_OUTSIDE = ("{name} is not an endpoint key variable: an entry may name only a variable whose name begins "
                        f"with {KEY_VARIABLE_PREFIX} (e.g. {KEY_VARIABLE_PREFIX}TEAM), set where the workers run. "
                        "Rename the variable and name the new one here.")
USERINFO_IN_URL = ("A base URL with a user name or password in it (user@host) would keep a secret in plain text: "
                   "give the host only, and the key as the entry's key.")


def origin(url: str) -> tuple[str, str, int] | None:
    """The scheme, host and port a client would send to, normalised: the host in lower case without a
    trailing dot, an IP address in one spelling (http://[0:0::1] is http://[::1]), the default port
    written out (http://a:80 is http://a). None for what is no http(s) URL with a host."""
    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError):
        return None
    if parsed.scheme not in DEFAULT_PORTS or not parsed.host:
        return None
    host = parsed.host.lower().rstrip(".")
    with contextlib.suppress(ValueError):  # an address, in one spelling; else a name, as it is
        host = ipaddress.ip_address(host).compressed
    return parsed.scheme, host, parsed.port or DEFAULT_PORTS[parsed.scheme]


def same_origin(before: str, after: str) -> bool:
    """Whether a key given for `before` may go to `after`: both the same origin (a change of path is)."""
    was = origin(before)
    return was is not None and was == origin(after)


def has_userinfo(url: str) -> bool:
    try:
        return bool(httpx.URL(url.strip()).userinfo)
    except (httpx.InvalidURL, TypeError):
        return False
