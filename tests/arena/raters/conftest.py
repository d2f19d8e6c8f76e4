import pytest


@pytest.fixture
def mine(client, owner):
    """The owner's logged-in test client."""
    client.force_login(owner)
    return client


@pytest.fixture
def client_factory():
    """Fresh clients: a rater each, no account, no session of the owner's."""
    from django.test import Client

    return lambda **kwargs: Client(**kwargs)
