"""Failure reasons as users read them: no server path or traceback; staff keep the full line
(Generation.metrics["failure_detail"], the catalogue probe); and an admin's package source is
validated without importing the package (inference/sources.check_source)."""

import pytest

from arena.api.views import generation_json
from arena.catalogue.models import ModelEntry
from arena.catalogue.probe import _result
from arena.generations.models import Generation
from tests.arena.factories import generation

pytestmark = pytest.mark.django_db

RAW = ("The model failed to load: gguf file 'x.gguf' not found in /home/arena/.cache/llm-arena/models/x "
       "(Traceback (most recent call last):\n  File \"/work/main/inference/loading.py\", line 80, in load\n"
       "OSError: /work/main/var/x.bin)")


def test_a_stored_failure_carries_no_path_and_staff_keep_the_line(owner, smollm):
    gen = generation(owner, smollm)
    Generation.objects.filter(id=gen.id).update(status=Generation.Status.RUNNING, finished_at=None)
    gen.refresh_from_db()
    assert gen.finish(Generation.Status.FAILED, text="", reason=RAW)
    gen.refresh_from_db()
    assert "/home" not in gen.failure_reason and "/work" not in gen.failure_reason
    assert "Traceback" not in gen.failure_reason and gen.failure_reason.startswith("The model failed to load")
    assert gen.metrics["failure_detail"] == RAW
    assert RAW in _result(smollm, gen).error  # the probe is staff's: the full line
    shown = generation_json(gen)  # what the owner's API client reads
    assert "failure_detail" not in shown["request_metrics"] and "/home" not in str(shown)


def test_a_package_source_is_validated_without_importing_it(booby_trapped, catalogue):
    entry = ModelEntry(slug="trap", name="Trap", engine=ModelEntry.Engine.LLAMACPP, source="package:trap_gguf_pkg",
                       gguf_file="trap.gguf", memory_estimate_mb=100)
    errors = {}
    try:
        entry.clean()
    except Exception as exc:  # other fields' errors do not matter here
        errors = getattr(exc, "message_dict", {"?": [str(exc)]})
    assert "source" not in errors, errors
    assert not booby_trapped.exists()
