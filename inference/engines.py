"""Which engine serves a loaded model: one place that maps a worker kind to its engine."""

from __future__ import annotations

from inference.engine import Engine
from inference.loading import LoadedModel
from inference.speculative import SpeculativeEngine


def build_engine(loaded: LoadedModel):
    """The engine for `loaded` (every engine has encode / check_context / stream)."""
    if loaded.kind == "speculative":
        return SpeculativeEngine.from_loaded(loaded)
    return Engine.from_loaded(loaded)
