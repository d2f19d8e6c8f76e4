# LLM Arena: `make run` starts everything, `make test` runs the whole suite.
# Both set up what they need first (scripts/bootstrap.sh is idempotent).
VENV ?= .venv
PY := $(VENV)/bin/python
# pytest processes for `make test` (pytest-xdist); 0 runs the suite in one process.
TEST_JOBS ?= 2

.PHONY: run test lint setup bench bench-streaming bench-engine bench-orchestration bench-load bench-blind bench-cores bench-compiled bench-selection soak clean

setup:
	@bash scripts/bootstrap.sh

run: setup
	@$(PY) -m arena.launcher

# Lint and type-check, the whole suite on SQLite, then (with no PYTEST_ARGS) its
# database-backed tests on PostgreSQL.
test: setup lint
	@$(PY) -m pytest -n $(TEST_JOBS) --dist loadgroup --durations=25 $(PYTEST_ARGS)
	@[ -n "$(PYTEST_ARGS)" ] || PY=$(PY) TEST_JOBS=$(TEST_JOBS) bash scripts/test_postgres.sh

# Style, the layering (import-linter's contracts in .importlinter) and types.
lint: setup
	@$(VENV)/bin/ruff check .
	@$(VENV)/bin/lint-imports --no-cache --no-logo
	@$(VENV)/bin/mypy

bench: bench-streaming bench-engine bench-orchestration bench-load bench-blind bench-cores

bench-streaming: setup
	@$(PY) bench/streaming.py

bench-engine: setup
	@$(PY) bench/engine.py

bench-orchestration: setup
	@$(PY) bench/orchestration.py

# 200 WebSocket viewers on 32 concurrent generations: tokens lost/duplicated, extra latency, errors.
bench-load: setup
	@$(PY) bench/load.py $(BENCH_LOAD_ARGS)

# A blind match between a fast and a slow contestant: paced frame timing per side, side-channel leaks.
bench-blind: setup
	@$(PY) bench/blind.py

# The adaptive suite-run format against round robin on a simulated noisy judge: judge calls and Kendall tau.
bench-selection: setup
	@$(PY) bench/selection.py

# Two workers decoding at once, each pinned to its share of the cores, against half a solo worker.
bench-cores: setup
	@$(PY) bench/cores.py

# torch.compile against eager decoding at 1 and 2 threads, with cold starts (about 15 minutes:
# four processes each compile; not part of `make bench`).
bench-compiled: setup
	@$(PY) bench/compiled.py

# MINUTES of mixed load (playground, comparisons, tournaments, OpenAI streams) with faults injected:
# lost, 5xx, stored vs streamed text, RSS and Redis growth (bench/soak.py; not part of `make bench`).
MINUTES ?= 20
soak: setup
	@$(PY) bench/soak.py --minutes $(MINUTES) $(SOAK_ARGS)

clean:
	rm -rf $(VENV) var .pytest_cache
