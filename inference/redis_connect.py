"""How every process of the arena reaches Redis, and how a Redis URL may be shown.

One URL, REDIS_URL, on every machine: `redis://HOST:6379/0` on a private network,
`redis://:PASSWORD@HOST:6379/0` for a server with `requirepass`, `redis://USER:PASSWORD@HOST:6379/0`
for an ACL user, and `rediss://...` for TLS. TLS files come from the environment, so that
the URL stays the one thing to pass on:
- ARENA_REDIS_TLS_CA: the CA file that signed the server's certificate (else the system's CAs);
- ARENA_REDIS_TLS_CERT, ARENA_REDIS_TLS_KEY: this machine's client certificate and key, where
  the server asks for one (`tls-auth-clients yes`).
A rediss:// server's certificate is always verified (host name included).

Django-free: the inference workers, the orchestrator's backends (on any Ray node) and the
Django side (clients, Celery's broker) all build their connections here. A password must
never reach a log, an error message or a command line (`ps` shows every user's): processes
get the URL in their environment, and whatever shows a URL shows `redact(url)`."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

import redis
import redis.asyncio as aioredis

from inference import config


def is_tls(url: str) -> bool:
    return url.startswith("rediss://")


def tls_files(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """redis-py's names for the TLS files set in the environment."""
    return dict(config.current(env).redis_tls)


def tls_options(url: str, env: Mapping[str, str] | None = None) -> dict:
    """redis-py's connection options for `url`: none for redis://, verified TLS for rediss://."""
    if not is_tls(url):
        return {}
    return {"ssl_cert_reqs": "required", **tls_files(env)}


def celery_ssl(url: str, env: Mapping[str, str] | None = None) -> dict | None:
    """Celery's `broker_use_ssl` for `url` (None for redis://). Without it kombu takes a rediss://
    URL with certificate checks off."""
    if not is_tls(url):
        return None
    return {"ssl_cert_reqs": ssl.CERT_REQUIRED, **tls_files(env)}


def connect(url: str, **options) -> redis.Redis:
    return redis.Redis.from_url(url, **{**tls_options(url), **options})


def connect_async(url: str, **options) -> aioredis.Redis:
    return aioredis.Redis.from_url(url, **{**tls_options(url), **options})


def async_pool(url: str, **options) -> aioredis.BlockingConnectionPool:
    return aioredis.BlockingConnectionPool.from_url(url, **{**tls_options(url), **options})


def redact(url: str) -> str:
    """`url` with its password (if any) shown as ***: what logs and messages may print."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        user = parts.username or ""
        host = parts.hostname or ""
        if ":" in host:  # IPv6
            host = f"[{host}]"
        netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    except ValueError:  # not a URL we can read: show none of it rather than a secret
        return "<unreadable Redis URL>"
    return urlunsplit(parts._replace(netloc=netloc))
