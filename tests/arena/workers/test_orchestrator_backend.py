"""Which backend the orchestrator command builds, and the errors an operator reads when the
choice is wrong (the command stops before it starts anything)."""

import pytest
from django.core.management.base import CommandError

from arena.workers.management.commands.orchestrator import build_backend
from orchestration.backends.local import LocalBackend


def test_local_is_the_default_backend(settings, tmp_path):
    settings.ARENA_WORKER_LOG_DIR = tmp_path
    assert isinstance(build_backend(), LocalBackend)


def test_the_ray_backend_needs_the_cluster_s_address(settings, monkeypatch):
    settings.ARENA_ORCHESTRATOR_BACKEND = "ray"
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(CommandError, match="ARENA_ORCHESTRATOR_BACKEND=ray needs RAY_ADDRESS"):
        build_backend()


def test_the_agents_backend_is_gone_with_a_clear_message(settings):
    settings.ARENA_ORCHESTRATOR_BACKEND = "nodes"
    with pytest.raises(CommandError, match="must be 'local' or 'ray', not 'nodes'"):
        build_backend()
