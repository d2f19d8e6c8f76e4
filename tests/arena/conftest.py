import contextlib

import pytest
from django.contrib.auth import get_user_model

from arena.catalogue.defaults import DEFAULT_ENTRIES
from arena.catalogue.models import ModelEntry


@pytest.fixture
def catalogue(db):
    return [ModelEntry.objects.create(**entry) for entry in DEFAULT_ENTRIES]


@pytest.fixture
def smollm(catalogue):
    return catalogue[0]


@pytest.fixture
def owner(db):
    return get_user_model().objects.create_user("owner", password="owner-pass-1")


@pytest.fixture
def outsider(db):
    return get_user_model().objects.create_user("outsider", password="outsider-pass-1")


@pytest.fixture
def token(owner):
    """An API token of the owner persona."""
    from arena.accounts.models import ApiToken

    return ApiToken.issue(owner)


@pytest.fixture(autouse=True)
def _nothing_left_by_another_test():
    """Django's cache (per process), /healthz's checks and what the session's Redis prefix holds
    (share links' uncounted views, workers, leases, the orchestrator's status, queued Celery
    messages, limits' windows) outlive a test's database: each test starts without another's
    (docs/security.md, "Cached pages"; docs/testing.md, "Tests that cannot flake")."""
    from django.core.cache import caches

    from arena import health

    for cache in caches.all(initialized_only=True):
        cache.clear()
    health.reset_cache()
    with contextlib.suppress(Exception):  # a test that stopped Redis on purpose: nothing was left there
        _clear_session_prefix()
    yield


# Kept under the prefix for a process's whole life: kombu's exchange bindings (declared once per
# connection: without them a task is published to nowhere) and a stream hub's wake stream.
PROCESS_KEYS = ("celery:_kombu.", "ws-hub:")


def _clear_session_prefix() -> None:
    from arena import streams

    client, prefix = streams.client(), streams.keys().prefix
    stale = [key for key in client.scan_iter(match=f"{prefix}:*", count=1000)
             if not key.decode().removeprefix(f"{prefix}:").startswith(PROCESS_KEYS)]
    if stale:
        client.delete(*stale)
