# LLM Arena: `make run` starts everything, `make test` runs the whole suite.
# Both set up what they need first (scripts/bootstrap.sh is idempotent).
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run test setup bench bench-streaming bench-engine bench-orchestration clean

setup:
	@bash scripts/bootstrap.sh

run: setup
	@$(PY) -m arena.launcher

test: setup
	@$(PY) -m pytest $(PYTEST_ARGS)

bench: bench-streaming bench-engine bench-orchestration

bench-streaming: setup
	@$(PY) bench/streaming.py

bench-engine: setup
	@$(PY) bench/engine.py

bench-orchestration: setup
	@$(PY) bench/orchestration.py

clean:
	rm -rf $(VENV) var .pytest_cache
