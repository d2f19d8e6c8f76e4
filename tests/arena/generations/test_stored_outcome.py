"""What the database stored for a generation whose stream is gone (arena/generations/outcome.py):
the row once finished, and that row as the terminal event its stream ended with."""

import pytest

from arena.generations import outcome
from arena.generations.models import Generation
from inference import protocol as p

pytestmark = pytest.mark.django_db


@pytest.fixture
def gen(owner, smollm):
    return Generation.objects.create(owner=owner, model=smollm, prompt="Hi", params={})


def test_a_generation_is_stored_only_once_finished_and_not_once_deleted(gen):
    assert outcome.stored(gen.id) is None  # queued: its stream (or its task) still has the say
    gen.finish(Generation.Status.DONE, text="Hello", finish_reason="stop")
    stored = outcome.stored(gen.id)
    assert stored is not gen and stored.status == Generation.Status.DONE and stored.text == "Hello"
    gen.delete()
    assert outcome.stored(gen.id) is None


def test_a_done_generation_is_a_done_event_with_its_text_reason_and_token_counts(gen):
    gen.finish(Generation.Status.DONE, text="Paris", finish_reason="length",
               metrics={"prompt_tokens": 7, "generated_tokens": 2})
    assert outcome.terminal_event(outcome.stored(gen.id)) == {
        "type": p.DONE, "text": "Paris", "finish_reason": "length",
        "metrics": {"prompt_tokens": 7, "generated_tokens": 2}}


def test_a_cancelled_generation_is_a_cancelled_event_with_its_partial_text(gen):
    gen.finish(Generation.Status.CANCELLED, text="Par")
    assert outcome.terminal_event(outcome.stored(gen.id)) == {"type": p.CANCELLED, "text": "Par"}


def test_a_failed_generation_keeps_the_code_only_its_streams_failure_gave(gen):
    gen.finish(Generation.Status.FAILED, text="", reason="The model could not be loaded.")
    stored = outcome.stored(gen.id)
    assert outcome.terminal_event(stored) == {"type": p.FAILED, "reason": "The model could not be loaded.",
                                              "code": None}
    failed = {"type": p.FAILED, "reason": "worker words", "code": p.LOAD_FAILED}
    assert outcome.terminal_event(stored, failed) == {"type": p.FAILED, "reason": "The model could not be loaded.",
                                                      "code": p.LOAD_FAILED}  # the database's words, the code
    assert outcome.terminal_event(stored, {"type": p.DONE, "text": ""})["code"] is None
