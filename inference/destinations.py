"""Where an endpoint's requests, and its key, may go: the origin of a base URL (scheme, host, port)
and the operator's optional allow-list of endpoint hosts (ARENA_ENDPOINT_HOSTS).

Pure: no environment, no network. URLs are read by httpx, the client that sends the key (the
catalogue's check and the worker's adapter), so the host compared is the host it would connect
to: `http://a.example@b.example/` is b.example to both.
"""

from __future__ import annotations

import contextlib
import ipaddress

import httpx

DEFAULT_PORTS = {"http": 80, "https": 443}
Origin = tuple[str, str, int]


def origin(url: str) -> Origin | None:
    """The scheme, host and port a client would send to, normalised: the host in lower case without a
    trailing dot, an IP address in one spelling (http://[0:0::1] is http://[::1]), the default port
    written out (http://a:80 is http://a). None for what is no http(s) URL with a host."""
    parsed = _parse(url)
    if parsed is None or parsed.scheme not in DEFAULT_PORTS or not parsed.host:
        return None
    return parsed.scheme, _host(parsed.host), parsed.port or DEFAULT_PORTS[parsed.scheme]


def same_origin(before: str, after: str) -> bool:
    """Whether a key given for `before` may go to `after`: both the same origin (a change of path is)."""
    was = origin(before)
    return was is not None and was == origin(after)


def has_userinfo(url: str) -> bool:
    """A user name or password in the URL (httpx would send it as Basic credentials)."""
    parsed = _parse(url)
    return parsed is not None and bool(parsed.userinfo)


Hosts = tuple[tuple[str, int | None], ...]


def parse_hosts(text: str) -> Hosts | None:
    """ARENA_ENDPOINT_HOSTS: comma-separated hosts, each with a port (gpu-node-1:8000, [::1]:8080) or
    without (api.example.com: any port). None when it is blank (no allow-list); malformed items are
    left out, so a setting of nothing valid allows nothing."""
    if not text.strip():
        return None
    hosts = []
    for item in (part.strip() for part in text.split(",")):
        if not item or "/" in item or "@" in item:
            continue
        plain, secure = _parse(f"http://{item}"), _parse(f"https://{item}")
        if plain is None or secure is None or not plain.host:
            continue
        # httpx drops a scheme's default port: read under both schemes, so ":80" and ":443" stay.
        hosts.append((_host(plain.host), plain.port or secure.port))
    return tuple(hosts)


def host_allowed(url: str, hosts: Hosts | None) -> bool:
    """Whether `url` is on one of `hosts` (parse_hosts); None (no allow-list) allows every host."""
    if hosts is None:
        return True
    where = origin(url)
    return where is not None and any(host == where[1] and port in (None, where[2]) for host, port in hosts)


def _parse(url: str) -> httpx.URL | None:
    try:
        return httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError, ValueError):
        return None


def _host(host: str) -> str:
    host = host.lower().rstrip(".")
    with contextlib.suppress(ValueError):  # an address, in one spelling; else a name, as it is
        host = ipaddress.ip_address(host).compressed
    return host
