"""Where a generation's time went, each part apart (Generation.finish, Run): the wait in line, the
wait for a worker (the model's load on a cold start), and the time to first token from when the
worker began the answer, so a cold start never reads as a slow model. Times are given, not read
from a clock: a worker's metrics carry its own timestamps."""

from datetime import timedelta

import pytest

from arena.generations.models import Generation
from arena.leaderboard.measures import median_speeds

pytestmark = pytest.mark.django_db
S = Generation.Status


def queued(owner, model, *, in_line_s: float) -> Generation:
    gen = Generation.objects.create(owner=owner, model=model, prompt="Name a colour.", params={"max_new_tokens": 8})
    Generation.objects.filter(id=gen.id).update(admitted_at=gen.created_at + timedelta(seconds=in_line_s))
    return Generation.objects.get(id=gen.id)


def worker_metrics(began: float, *, worker_queue_s: float, ttft_s: float) -> dict:
    """A terminal event's metrics as inference.lifecycle writes them, for a job handed over at `began`."""
    return {"arrival_time": began, "first_scheduled_time": began + worker_queue_s,
            "first_token_time": began + worker_queue_s + ttft_s, "last_token_time": began + 9.0,
            "time_in_queue": worker_queue_s, "generated_tokens": 8, "decode_tokens_per_s": 20.0}


def test_a_cold_answer_keeps_its_load_and_its_wait_out_of_the_time_to_first_token(owner, smollm):
    gen = queued(owner, smollm, in_line_s=3.0)
    gen.record_load_wait(6.5)  # the run waited 6.5 s for its worker: a cold start
    handed_over = gen.created_at.timestamp() + 3.0 + 6.5
    assert gen.finish(S.DONE, text="Blue.", finish_reason="length",
                      metrics=worker_metrics(handed_over, worker_queue_s=0.5, ttft_s=0.25))
    gen.refresh_from_db()
    assert gen.time_to_first_token_s == pytest.approx(0.25)  # not 10.25 s from Send
    assert gen.load_wait_s == pytest.approx(6.5)
    assert gen.queue_wait_s == pytest.approx(3.5)  # the fair line, then the worker's own queue
    assert gen.tokens_per_s == 20.0 and gen.finish_reason == "length"


def test_an_older_workers_metrics_give_the_same_figures(owner, smollm):
    """A worker from before this change wrote ttft_s from the job's arrival; the raw times are what count."""
    gen = queued(owner, smollm, in_line_s=0.0)
    metrics = worker_metrics(gen.created_at.timestamp() + 1.0, worker_queue_s=2.0, ttft_s=0.5)
    metrics["ttft_s"] = 2.5
    assert gen.finish(S.DONE, text="Blue.", finish_reason="stop", metrics=metrics)
    gen.refresh_from_db()
    assert gen.time_to_first_token_s == pytest.approx(0.5) and gen.queue_wait_s == pytest.approx(2.0)


def test_an_answer_that_never_left_the_line_has_no_queue_figure(owner, smollm):
    gen = Generation.objects.create(owner=owner, model=smollm, prompt="Name a colour.")
    assert gen.finish(S.CANCELLED, text="")  # stopped in line, as the fair line ends it
    gen.refresh_from_db()
    assert gen.queue_wait_s is None and gen.time_to_first_token_s is None and gen.load_wait_s is None
    assert gen.finish_reason == "cancelled"


def test_the_load_wait_is_stored_at_once(owner, smollm):
    """Before the job reaches its worker, so the page that shows the answer's end already has it."""
    gen = queued(owner, smollm, in_line_s=0.0)
    gen.record_load_wait(4.0)
    gen.record_load_wait(gen.load_wait_s + 1.5)  # a second lease after a worker stopped adds to it
    assert Generation.objects.get(id=gen.id).load_wait_s == pytest.approx(5.5)


def test_the_leaderboards_speed_is_the_decode_rate_whatever_the_load(owner, smollm):
    """The charts' speeds come from the decode rate alone: a cold answer and a warm one decoding alike
    count alike (the load and the wait are never part of it)."""
    for load_s in (30.0, 0.05):
        gen = queued(owner, smollm, in_line_s=0.0)
        gen.record_load_wait(load_s)
        began = gen.created_at.timestamp() + load_s
        assert gen.finish(S.DONE, text="Blue.", finish_reason="stop",
                          metrics=worker_metrics(began, worker_queue_s=0.0, ttft_s=0.25))
    assert median_speeds(Generation.objects.filter(model=smollm)) == {smollm.slug: 20.0}
