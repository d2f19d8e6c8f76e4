# LLM Arena: `make run` starts everything, `make test` runs the whole suite.
# Both set up what they need first (scripts/bootstrap.sh is idempotent).
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run test setup bench clean

setup:
	@bash scripts/bootstrap.sh

run: setup
	@$(PY) -m arena.launcher

test: setup
	@$(PY) -m pytest $(PYTEST_ARGS)

bench: setup
	@$(PY) bench/streaming.py

clean:
	rm -rf $(VENV) var .pytest_cache
