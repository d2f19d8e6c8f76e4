"""Fixtures the suite run tests share (a module may define its own of the same name instead)."""

import pytest


@pytest.fixture
def mine(client, owner):
    """The owner's logged-in test client."""
    client.force_login(owner)
    return client


@pytest.fixture
def three(catalogue):
    """Three catalogue entries: a round robin of three pairs."""
    return catalogue[:3]
