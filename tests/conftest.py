"""Fixtures shared by the whole suite.

Redis is real (it runs on every machine of this project); each test session
works under its own key prefix so it never meets another session's keys.
"""

import os
import textwrap
import uuid
from collections import OrderedDict

import pytest
import redis

from harness.private_redis import PrivateRedis

pytest_plugins = ["tests.tiny_models"]  # the tiny random-weight model and the real tokenizer

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture(scope="session")
def redis_url() -> str:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.ConnectionError as exc:  # the suite needs a real Redis, never a fake
        pytest.exit(f"Redis does not answer at {REDIS_URL}: {exc}", returncode=2)
    return REDIS_URL


@pytest.fixture
def redis_prefix(redis_url):
    """A fresh key prefix for one test; its keys are deleted afterwards."""
    prefix = f"arena-test-{uuid.uuid4().hex[:12]}"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(match=f"{prefix}:*", count=500):
        client.delete(key)


@pytest.fixture
def redis_client(redis_url):
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def private_redis():
    """A redis-server of this test's own (harness/private_redis.py), which it may kill and restart."""
    server = PrivateRedis()
    server.start()
    yield server
    server.stop()


# The live modules that share a running application (tests/live/conftest.py) form two groups
# of about equal length (each alone, 2026-11-26: 5m26s and 5m47s; docs/testing.md), so each test
# process runs one group against an application of its own; the others start their own
# (reliability, launcher) and are groups like any module.
LIVE_GROUPS = {
    "test_tournament_faults": "live-1", "test_tournament_browser": "live-1", "test_xss_browser": "live-1",
    "test_engines": "live-1", "test_openai_client": "live-1", "test_accounts_browser": "live-1",
    "test_pages_browser": "live-1", "test_catalogue_admin": "live-1",
    "test_timings_browser": "live-1",  # a few 8-token answers of fresh llama.cpp entries
    "test_generation_flow": "live-2", "test_compare_browser": "live-2", "test_faults": "live-2",
    "test_load_bench": "live-2", "test_browser": "live-2", "test_blind_pacing": "live-2",
    "test_chart_labels": "live-2",  # light: rows written to the database, no model runs
    "test_vote_reasons_browser": "live-1",  # light: rows written to the database, no model runs
    "test_teams_browser": "live-1",  # light: rows written to the database, no model runs
    "test_anonymous_browser": "live-2",  # one short anonymous battle of the two llama.cpp entries
    # With the pacing test, never beside it: its minutes of decoding on every core skew the paced gaps.
    "test_suite_runs": "live-2",
    # Starts its own application (private Redis) but loads every core for minutes: the same reason.
    "test_soak": "live-2",
    # Starts its own Ray cluster and application (about 25 s alone): a unit of its own, handed out early.
    "test_ray_backend": "live-ray",
}


def xdist_group(nodeid: str) -> str:
    """The unit of work a test belongs to under pytest-xdist: its module, or its live group."""
    module = nodeid.split("::")[0]
    return LIVE_GROUPS.get(module.rsplit("/", 1)[-1].removesuffix(".py"), module)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` (`make test`) with our own groups: a module's tests stay in one process,
    so module fixtures (started orchestrators, loaded models) start once, and the live modules
    that share an application go to LIVE_GROUPS. xdist's own loadgroup cannot do it under
    pytest 9: it renames `item._nodeid`, which pytest 9 no longer reads, so every test was its own
    group. The groups are taken from the node ids here, in the controller; the live groups are
    handed out first (the longest units: started last, they would be the long pole)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:  # once, when the work queue is complete: the longest units first
                self.workqueue = OrderedDict(sorted(self.workqueue.items(), key=_longest_first))
                self.ordered = True
            super()._assign_work_unit(node)

    return GroupScheduling(config, log)


# Modules that are not live but long (real models, real worker processes), in seconds measured
# with --durations on 2 busy cores (2026-11-26): handed out after the live modules and before the
# rest, so that none of them is the last unit and runs on alone while the other process idles.
LONG_MODULES = {
    "tests/inference/test_structured_smollm2.py": 127, "tests/orchestration/test_service.py": 116,
    "tests/inference/test_smollm2.py": 46, "tests/inference/test_worker.py": 36,
    "tests/orchestration/test_ray.py": 110, "tests/orchestration/test_redis_auth.py": 47,
    "tests/inference/test_awq.py": 32, "tests/inference/test_speculative.py": 32,
    "tests/orchestration/test_redis_restart.py": 23, "tests/arena/accounts/test_socket_cap.py": 21,
    "tests/inference/test_scheduler.py": 20,
}


def _longest_first(unit: tuple[str, dict]) -> tuple[int, int]:
    """The live groups, then the other live modules, then the long modules (longest first), then
    the rest by their number of tests."""
    scope, tests = unit
    if scope in LIVE_GROUPS.values():
        return 0, -len(tests)
    if scope.startswith("tests/live/"):
        return 1, -len(tests)
    if scope in LONG_MODULES:
        return 2, -LONG_MODULES[scope]
    return 3, -len(tests)


def pytest_unconfigure(config):
    try:
        from django.conf import settings
    except ImportError:  # a GPU machine running tests/inference/test_gpu.py has torch, not the web side
        return

    if not settings.configured:
        return
    _drop_redis_keys(settings.ARENA_REDIS_PREFIX)
    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        _drop_postgres_test_database(settings.DATABASES["default"])


def _drop_redis_keys(prefix: str) -> None:
    """The keys this session's Django side left under its own prefix (queued Celery messages,
    streams, limits' windows): the shared Redis should not keep them. Only a test prefix: one
    set in the environment may be a running application's."""
    if not prefix.startswith("arena-test-"):
        return
    try:
        client = redis.Redis.from_url(REDIS_URL)
        for key in client.scan_iter(match=f"{prefix}:*", count=1000):
            client.delete(key)
    except redis.RedisError:
        pass  # Redis gone at the end of the run: nothing to tidy


def _drop_postgres_test_database(db: dict) -> None:
    """On PostgreSQL a thread pool's connection (Channels' database_sync_to_async) can outlive
    pytest-django's teardown, which then cannot drop the test database: drop it with FORCE."""
    import psycopg

    name = db.get("TEST", {}).get("NAME")
    if not name:
        return
    with psycopg.connect(host=db["HOST"], port=db["PORT"] or 5432, user=db["USER"], password=db["PASSWORD"],
                         dbname="postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def booby_trapped(tmp_path, monkeypatch):
    """A package `trap_gguf_pkg` whose import leaves a mark (the returned path): MODEL_NAME and
    assemble() as chunked GGUF packages have, to show a source is checked without importing it."""
    package = tmp_path / "trap_gguf_pkg"
    package.mkdir()
    marker = tmp_path / "imported"
    (package / "__init__.py").write_text(textwrap.dedent(f"""
        open({str(marker)!r}, "w").write("ran")
        MODEL_NAME = "trap.gguf"

        def assemble(output_path):
            raise RuntimeError("never in the web process")
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("ARENA_MODEL_CACHE", str(tmp_path / "cache"))
    return marker
