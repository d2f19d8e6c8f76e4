"""The Django side on a Redis with a password, and on one speaking only TLS with client
certificates (harness/private_redis.py): the process's client, the sockets' pool and the
launcher's check all connect from REDIS_URL (and ARENA_REDIS_TLS_*), and no message or log
line shows the password (inference/redis_connect.py)."""

import pytest

from arena import launcher, streams
from harness.private_redis import PrivateRedis, make_tls_files
from inference.redis_connect import celery_ssl, redact, tls_options

PASSWORD = "arena-test-secret"


@pytest.fixture(params=["password", "tls"])
def secured(request, tmp_path, monkeypatch, settings):
    tls = make_tls_files(tmp_path) if request.param == "tls" else None
    server = PrivateRedis(password=PASSWORD, tls=tls)
    server.start()
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    settings.REDIS_URL = server.url
    yield server
    server.stop()


async def test_the_django_side_connects_with_the_url_alone(secured):
    assert streams.client.__wrapped__().ping()  # not the cached one: that is the shared Redis's
    async_client = streams.async_client()
    assert await async_client.ping()
    await async_client.aclose()
    pool = streams.SocketRedis()  # what a server process's sockets share
    assert await pool.client.ping()
    await pool.pool.disconnect()
    assert launcher.redis_answers(secured.url)


def test_the_launcher_names_a_refusing_redis_without_its_password(secured):
    wrong = secured.url.replace(PASSWORD, "wrong-secret")
    with pytest.raises(SystemExit) as refused:
        launcher.Launcher({"REDIS_URL": wrong}).choose_redis()
    message = str(refused.value)
    assert "does not answer" in message and "wrong-secret" not in message and ":***@" in message


@pytest.mark.parametrize("url, shown", [
    ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
    ("redis://:s3cret@10.0.0.5:6379/0", "redis://:***@10.0.0.5:6379/0"),
    ("redis://arena:s3cret@redis.internal/1", "redis://arena:***@redis.internal/1"),
    ("rediss://:p%40ss@[::1]:6380/0", "rediss://:***@[::1]:6380/0"),
    ("redis://:s3cret@host:port/0", "<unreadable Redis URL>"),
])
def test_urls_are_shown_without_their_password(url, shown):
    assert redact(url) == shown


def test_tls_options_only_for_rediss():
    env = {"ARENA_REDIS_TLS_CA": "/etc/arena/ca.pem"}
    assert tls_options("redis://h:6379/0", env) == {} and celery_ssl("redis://h:6379/0", env) is None
    assert tls_options("rediss://h:6379/0", env) == {"ssl_cert_reqs": "required", "ssl_ca_certs": "/etc/arena/ca.pem"}
    assert celery_ssl("rediss://h:6379/0", {})["ssl_cert_reqs"] == 2  # ssl.CERT_REQUIRED
