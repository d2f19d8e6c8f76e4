"""bench/pass_matrix.py runs, tiny: it seeds its run in a test database of its own, renders the
pass matrix and the run page, and prints its figures (the last line JSON). No time is asserted:
the figures at full size (500 prompts x 16 contestants) are in docs/suites.md."""

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench" / "pass_matrix.py"


def test_the_bench_seeds_a_run_and_times_both_pages(tmp_path):
    done = subprocess.run([sys.executable, str(BENCH), "--prompts", "7", "--contestants", "3", "--repeat", "1"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert (figures["prompts"], figures["contestants"], figures["answers"]) == (7, 3, 21)
    assert set(figures["pages"]) == {"matrix", "matrix_failing", "matrix_tag", "matrix_last_page", "run_page"}
    for page in figures["pages"].values():
        assert page["median_ms"] > 0 and page["bytes"] > 0 and page["queries"] > 0
    assert figures["rechecked"] == 21 - 1 and figures["recheck_ms"] > 0  # answer 5 failed to generate
    assert figures["run_page_over_matrix"] > 0 and isinstance(figures["within_goal"], bool)
    assert "the slowest matrix view" in done.stdout
