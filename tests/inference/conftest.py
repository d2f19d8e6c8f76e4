"""Fixtures for the inference tests: real worker processes (the tiny model and the tokenizer
come from tests/tiny_models.py, shared with the other packages)."""

from __future__ import annotations

import os
import uuid

import pytest

from .workers import WorkerProcess

os.environ.setdefault("HF_HUB_OFFLINE", "1")



@pytest.fixture
def start_worker(tmp_path, redis_url):
    """Start workers for one test; every one is stopped (then killed) afterwards."""
    started: list[WorkerProcess] = []

    def start(spec_json: str, prefix: str, env=None) -> WorkerProcess:
        worker_id = f"w-{uuid.uuid4().hex[:8]}"
        worker = WorkerProcess(worker_id, spec_json, redis_url, prefix, tmp_path / f"{worker_id}.log", env)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()
