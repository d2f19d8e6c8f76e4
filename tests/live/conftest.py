"""The live tests share one running application per test session (see app.py)."""

import pytest

from .app import running_app


@pytest.fixture(scope="session")
def live_app(tmp_path_factory, redis_url):
    with running_app(redis_url, tmp_path_factory.mktemp("live-app")) as app:
        yield app
