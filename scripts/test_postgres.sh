#!/usr/bin/env bash
# `make test`'s second pass: the database-backed tests again on PostgreSQL (DATABASE_URL),
# so both backends we support are exercised. Runs when a PostgreSQL answers at
# ARENA_TEST_POSTGRES_URL (default: the local one); in CI one must answer.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
URL=${ARENA_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/arena}
if ! "$PY" - "$URL" <<'PYEOF'
import sys
from urllib.parse import urlparse

import psycopg

url = urlparse(sys.argv[1])
psycopg.connect(host=url.hostname, port=url.port or 5432, user=url.username, password=url.password or "",
                dbname="postgres", connect_timeout=3).close()
PYEOF
then
    if [ "${CI:-}" = "true" ]; then
        echo "No PostgreSQL answers at $URL: CI runs the suite on it too." >&2
        exit 1
    fi
    echo "==> No PostgreSQL at $URL: the PostgreSQL pass is skipped (set ARENA_TEST_POSTGRES_URL)."
    exit 0
fi
echo "==> The database-backed tests again, on PostgreSQL ($URL)"
DATABASE_URL=$URL exec "$PY" -m pytest -q -n "${TEST_JOBS:-2}" --dist loadgroup \
    -m "not live and not slow and not browser" tests/arena
