"""How an answer ended and where its time went, in the JSON API (as its OpenAPI description says)
and in the exports: finish_reason (stop, length, stop_sequence, cancelled), time to first token
from when the worker began, and the model's load and the wait in line apart."""

import csv
import io
import json
from datetime import timedelta

import pytest

from arena.generations.models import Generation
from arena.history import export
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api

pytestmark = pytest.mark.django_db


def cut_cold(owner, model) -> Generation:
    """An answer cut at its 8-token limit, after 2 s in line and a 5 s cold start, first token 0.25 s after
    its worker began."""
    gen = Generation.objects.create(owner=owner, model=model, prompt="Count to twenty.",
                                    params={"max_new_tokens": 8})
    Generation.objects.filter(id=gen.id).update(admitted_at=gen.created_at + timedelta(seconds=2))
    gen.refresh_from_db()
    gen.record_load_wait(5.0)
    began = gen.created_at.timestamp() + 7.0
    assert gen.finish(Generation.Status.DONE, text="1 2 3 4 5 6 7 8", finish_reason="length", metrics={
        "generated_tokens": 8, "decode_tokens_per_s": 30.0, "arrival_time": began, "first_scheduled_time": began,
        "first_token_time": began + 0.25, "time_in_queue": 0.0})
    return gen


def test_the_api_says_the_cut_and_each_wait_apart(client, owner, token, smollm):
    gen = cut_cold(owner, smollm)
    body = api(client, "get", f"/api/v1/generations/{gen.id}", token).json()
    assert_conforms(body, "/api/v1/generations/{id}")
    assert body["finish_reason"] == "length"
    assert body["metrics"]["time_to_first_token_s"] == pytest.approx(0.25)
    assert body["metrics"]["load_wait_s"] == pytest.approx(5.0)
    assert body["metrics"]["queue_wait_s"] == pytest.approx(2.0)


def test_a_stop_sequence_is_told_from_the_end_of_an_answer_in_the_api(client, owner, token, smollm):
    gen = Generation.objects.create(owner=owner, model=smollm, prompt="List.", params={"stop": ["\n"]})
    gen.finish(Generation.Status.DONE, text="one", finish_reason="stop_sequence", metrics={"generated_tokens": 2})
    body = api(client, "get", f"/api/v1/generations/{gen.id}", token).json()
    assert_conforms(body, "/api/v1/generations/{id}")
    assert body["finish_reason"] == "stop_sequence"


def test_the_exports_carry_the_finish_reason_and_each_wait(client, owner, smollm):
    cut_cold(owner, smollm)
    client.force_login(owner)
    row = json.loads(b"".join(client.get("/history/export/generations.json").streaming_content))["rows"][0]
    assert row["finish_reason"] == "length" and row["time_to_first_token_s"] == pytest.approx(0.25)
    assert row["load_wait_s"] == pytest.approx(5.0) and row["queue_wait_s"] == pytest.approx(2.0)
    text = b"".join(client.get("/history/export/generations.csv").streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == export.COLUMNS["generations"]
    assert (rows[0]["finish_reason"], rows[0]["load_wait_s"], rows[0]["queue_wait_s"]) == ("length", "5.0", "2.0")
    assert {"left_load_wait_s", "right_queue_wait_s"} <= set(export.COLUMNS["battles"])
