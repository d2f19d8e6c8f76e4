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
def _no_cached_pages_from_another_test():
    """Django's cache (per process), /healthz's checks and share links' uncounted views outlive a
    test's database: each test starts without another's (docs/security.md, "Cached pages")."""
    from django.core.cache import caches

    from arena import health, streams

    for cache in caches.all(initialized_only=True):
        cache.clear()
    health.reset_cache()
    with contextlib.suppress(Exception):  # a test that stopped Redis on purpose: nothing was counted there
        streams.client().delete(streams.keys().share_views())
    yield
