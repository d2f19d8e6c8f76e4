# LLM Arena: `make run` starts everything, `make test` runs the whole suite.
# Both set up what they need first (scripts/bootstrap.sh is idempotent).
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run test setup bench bench-streaming bench-engine bench-orchestration bench-load clean

setup:
	@bash scripts/bootstrap.sh

run: setup
	@$(PY) -m arena.launcher

# The whole suite on SQLite, then (with no PYTEST_ARGS) its database-backed tests on PostgreSQL.
test: setup
	@$(PY) -m pytest $(PYTEST_ARGS)
	@[ -n "$(PYTEST_ARGS)" ] || PY=$(PY) bash scripts/test_postgres.sh

bench: bench-streaming bench-engine bench-orchestration bench-load

bench-streaming: setup
	@$(PY) bench/streaming.py

bench-engine: setup
	@$(PY) bench/engine.py

bench-orchestration: setup
	@$(PY) bench/orchestration.py

# 200 WebSocket viewers on 32 concurrent generations: tokens lost/duplicated, extra latency, errors.
bench-load: setup
	@$(PY) bench/load.py $(BENCH_LOAD_ARGS)

clean:
	rm -rf $(VENV) var .pytest_cache
