"""Settings for the test process: the application's, under a Redis prefix and a data
directory of this test session's own, so tests never touch a running `make run`."""

import os
import tempfile
import uuid

os.environ.setdefault("ARENA_DATA_DIR", tempfile.mkdtemp(prefix="arena-test-data-"))
os.environ.setdefault("ARENA_REDIS_PREFIX", f"arena-test-{uuid.uuid4().hex[:8]}")
if worker := os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs pytest-xdist processes, which inherit the controller's environment (set
    # just above, in the controller): each gets a prefix and a data directory of its own, or
    # two processes would share Redis keys and one SQLite file.
    os.environ["ARENA_REDIS_PREFIX"] += f"-{worker}"
    os.environ["ARENA_DATA_DIR"] = os.path.join(os.environ["ARENA_DATA_DIR"], worker)
    os.makedirs(os.environ["ARENA_DATA_DIR"], exist_ok=True)

from arena.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests

if DATABASES["default"]["ENGINE"].endswith("postgresql"):  # noqa: F405
    # A test database of this session's own: two suites at once never drop each other's.
    DATABASES["default"]["TEST"] = {"NAME": f"test_arena_{uuid.uuid4().hex[:8]}"}  # noqa: F405
else:
    # A file, as in production (WAL, busy timeout): an in-memory test database would share one
    # cache between threads, where concurrent writers fail at once instead of waiting their turn.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test-arena.sqlite3")}  # noqa: F405

# Per-user limits (arena/generations/limits.py) high enough never to refuse a test that is not about
# them (tests/arena/test_limits.py sets its own); the checks still run on every start.
ARENA_RATE_LIMIT_PER_MIN = 10_000
ARENA_MAX_CONCURRENT_PER_USER = 10_000
# The same for live sockets per user (arena/accounts/socket_cap.py; its tests set their own cap).
ARENA_MAX_SOCKETS_PER_USER = 10_000
