"""How fast a suite run's pass matrix page renders, beside the plain run page, on a big run.

Seeds one finished run in a fresh SQLite test database of its own (real rows, made as the app's
models store them, by harness/suite_matrix.py: a suite of --prompts prompts with tags and checks,
--contestants priced catalogue entries, every answer a done generation with its stored check
results, about a tenth failing, one in 97 failed to generate), then renders, through Django's
test client as the owner (middleware, session, templates: the whole response):

- the pass matrix's first page (`/suite-runs/<id>/matrix`), its "failing only" view, a tag's view
  and its last page,
- the run page (`/suite-runs/<id>/`), which shows every answer at once;

then times the re-check (`actions.start_recheck` with no time limit: every done answer's checks again, stored).

Each is rendered `--repeat` times; the median is reported (the machine is shared). Prints each
page's median and the ratio of the run page to the matrix, the SQL queries of each, the check
against the goal (the matrix under 300 ms), and last a JSON line. No time is asserted: the test
runs it tiny.

Usage: python bench/pass_matrix.py [--prompts 500] [--contestants 16] [--repeat 5] [--skip-run-page]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

GOAL_MS = 300.0


def setup_django(data_dir: str) -> None:
    """The app's settings on a data directory (and Redis prefix) of this run's own, with a file
    test database created by Django's test runner machinery (migrated as a test database is)."""
    os.environ["ARENA_DATA_DIR"] = data_dir
    os.environ["ARENA_FILE_TEST_DB"] = "1"
    os.environ.setdefault("ARENA_REDIS_PREFIX", f"arena-bench-{uuid.uuid4().hex[:8]}")
    os.environ["DJANGO_SETTINGS_MODULE"] = "arena.settings"
    os.environ.pop("DATABASE_URL", None)  # SQLite, as the tests default to
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment

    setup_test_environment()
    connection.creation.create_test_db(verbosity=0, autoclobber=True)


def timed(client, url: str, repeat: int) -> dict:
    """The median milliseconds of `repeat` GETs of `url` (after one unmeasured), its size and queries."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    return {"url": url, "median_ms": round(statistics.median(times), 1), "min_ms": round(min(times), 1),
            "bytes": len(response.content), "queries": len(queries.captured_queries)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=500)
    parser.add_argument("--contestants", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-run-page", action="store_true", help="leave out the plain run page (slow when big)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="arena-bench-matrix-") as data_dir:
        setup_django(data_dir)
        from django.test import Client

        from arena.suite_runs import matrix
        from harness.suite_matrix import TAGS, new_entries, seed

        started = time.perf_counter()
        from django.contrib.auth import get_user_model

        owner = get_user_model().objects.create_user("bench-owner", password="bench-pass-1")
        run = seed(owner, args.prompts, new_entries(args.contestants))
        seeded_s = time.perf_counter() - started
        client = Client()
        client.force_login(owner)
        base = f"/suite-runs/{run.id}/"
        last = max(1, -(-args.prompts // matrix.PAGE_PROMPTS))
        pages = {"matrix": timed(client, f"{base}matrix", args.repeat),
                 "matrix_failing": timed(client, f"{base}matrix?failing=1", args.repeat),
                 "matrix_tag": timed(client, f"{base}matrix?tag={TAGS[1]}", args.repeat),
                 "matrix_last_page": timed(client, f"{base}matrix?page={last}", args.repeat)}
        if not args.skip_run_page:
            pages["run_page"] = timed(client, base, max(1, min(args.repeat, 3)))
        # The re-check button's work (actions.start_recheck, unbounded): every done answer's three checks again.
        from arena.suite_runs.actions import start_recheck

        started = time.perf_counter()
        rechecked = start_recheck(run, budget_s=math.inf).checked
        recheck_s = time.perf_counter() - started
    answers = args.prompts * args.contestants
    print(f"{args.prompts} prompts x {args.contestants} contestants = {answers} answers, seeded in {seeded_s:.1f} s; "
          f"{matrix.PAGE_PROMPTS} prompts a page")
    for name, page in pages.items():
        print(f"  {name:17} {page['median_ms']:8.1f} ms median (min {page['min_ms']:.1f}), "
              f"{page['bytes'] / 1024:8.1f} KiB, {page['queries']} queries")
    print(f"  re-check          {recheck_s * 1000:8.1f} ms for {rechecked} answers "
          f"({recheck_s * 1e6 / max(1, rechecked):.0f} us an answer)")
    worst = max(page["median_ms"] for name, page in pages.items() if name.startswith("matrix"))
    figures = {"prompts": args.prompts, "contestants": args.contestants, "answers": answers,
               "page_prompts": matrix.PAGE_PROMPTS, "pages": pages, "matrix_worst_ms": worst,
               "recheck_ms": round(recheck_s * 1000, 1), "rechecked": rechecked,
               "goal_ms": GOAL_MS, "within_goal": worst < GOAL_MS}
    if "run_page" in pages:
        figures["run_page_over_matrix"] = round(pages["run_page"]["median_ms"] / pages["matrix"]["median_ms"], 2)
        print(f"the run page takes {figures['run_page_over_matrix']}x the matrix's first page")
    print(f"the slowest matrix view: {worst:.1f} ms ({'within' if worst < GOAL_MS else 'OVER'} the goal of "
          f"{GOAL_MS:.0f} ms)")
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()
