import pytest

from arena import streams


@pytest.fixture
def redis_client():
    """The application's own client (as the code under test uses it); this session's keys dropped after."""
    client = streams.client()
    yield client
    for key in client.scan_iter(match=f"{streams.keys().prefix}:*", count=1000):
        client.delete(key)
