"""The job and event schema shared by inference workers and the Django side.

This module is the only contract between `inference/` and the rest of the
application: it must stay free of Django (and of torch, so the web processes can
import it cheaply).

Transport, all in Redis (see `Keys`):
- a generation's events form one Redis Stream, replayable by late joiners and
  reconnecting browsers, expiring `STREAM_TTL_S` after its last write;
- a worker takes jobs from its own list (`Keys.worker_jobs`), JSON `Job`s;
- a worker keeps a hash of its own status (`Keys.worker`) and a heartbeat key
  that expires when it stops heartbeating;
- cancelling a generation is setting `Keys.cancel(generation_id)`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redis.typing import EncodableT, FieldT

PROTOCOL_VERSION = 1
STREAM_TTL_S = 3600
HEARTBEAT_INTERVAL_S = 1.0
HEARTBEAT_TTL_S = 5

# Event types written to a generation's stream.
QUEUED = "queued"  # accepted; waiting for a free slot: {"position", "waiting", "elapsed_s"}
LOADING = "loading"  # a worker for the model is starting: {"elapsed_s", "model", "progress"}
STARTED = "started"  # a worker took the job: {"prompt_tokens", "queue_s"}
# TOKEN: {"text": the new text, "n": generated tokens so far, "at": characters of the answer before
# it}; `at` lets a follower see a token it never got (a Redis restarted empty loses what it held).
TOKEN = "token"
# finish_reason: "stop" (the model ended its answer), "length" (cut at max_new_tokens, or a full
# context), "stop_sequence" (cut before a stop sequence; workers before it said "stop").
DONE = "done"  # {"text", "finish_reason": "stop"|"length"|"stop_sequence", "metrics"}
FAILED = "failed"  # {"reason": readable by a user, "code"}
CANCELLED = "cancelled"  # {"text": partial text, "metrics"}
TERMINAL_EVENTS = frozenset({DONE, FAILED, CANCELLED})

# Failure codes (the "code" of a FAILED event).
PROMPT_TOO_LONG = "prompt_too_long"
LOAD_FAILED = "load_failed"
WORKER_DIED = "worker_died"
ENGINE_ERROR = "engine_error"
TIMEOUT = "timeout"
BAD_JOB = "bad_job"
BUSY = "busy"  # a remote endpoint is rate limiting (HTTP 429): try again later (a worker itself never refuses)

# Worker states, as written in the worker's hash.
W_STARTING = "starting"
W_READY = "ready"
W_FAILED = "failed"
W_STOPPED = "stopped"

KINDS = ("full", "awq", "speculative")
# Who runs the model: our transformers worker, llama.cpp on a GGUF file, an
# OpenAI-compatible endpoint somewhere else (no local model at all), or an OpenAI-compatible
# server the worker starts from the entry's command (how vLLM comes in).
ENGINES = ("transformers", "llamacpp", "openai", "server")
ENGINE_KINDS = {"transformers": KINDS, "llamacpp": ("full", "speculative"), "openai": ("full",), "server": ("full",)}
PRECISIONS = ("auto", "fp32", "bf16", "fp16")


class ParamError(ValueError):
    """Sampling parameters a user got wrong; `errors` maps field -> message."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.7
    top_p: float = 0.95
    max_new_tokens: int = 256
    seed: int | None = None
    stop: tuple[str, ...] = ()  # the text ends before the first of these
    # Structured output (inference.structured): decoding constrained to a JSON schema or a
    # regex, at most one. Absent from to_dict() when unset, so unconstrained params keep their shape.
    json_schema: dict[str, Any] | None = None
    regex: str | None = None

    MAX_STOP_SEQUENCES = 4
    MAX_STOP_CHARS = 64
    LIMITS = {
        "temperature": (0.0, 2.0),
        "top_p": (0.01, 1.0),
        "max_new_tokens": (1, 2048),
    }

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    @property
    def constrained(self) -> bool:
        return self.json_schema is not None or self.regex is not None

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> SamplingParams:
        """Parse untrusted input; raise ParamError naming every wrong field."""
        data = dict(data or {})
        errors: dict[str, str] = {}
        unknown = set(data) - {"temperature", "top_p", "max_new_tokens", "seed", "stop", "json_schema", "regex"}
        for name in sorted(unknown):
            errors[name] = "unknown parameter"
        values: dict[str, Any] = {}
        for name, (lo, hi) in cls.LIMITS.items():
            if name not in data or data[name] is None:
                continue
            raw = data[name]
            want_int = name == "max_new_tokens"
            if isinstance(raw, bool) or not isinstance(raw, (int, float)):
                errors[name] = "must be a number"
                continue
            # The range first: exact for an int of any size (float() of a 400-digit one overflows),
            # and false for nan and infinities.
            if not lo <= raw <= hi:
                errors[name] = f"must be between {lo} and {hi}"
                continue
            if want_int and (not float(raw).is_integer()):
                errors[name] = "must be a whole number"
                continue
            values[name] = int(raw) if want_int else float(raw)
        seed = data.get("seed")
        if seed is not None:
            # JSON has one number type: 7.0 is the integer 7 (JSON Schema agrees), as for max_new_tokens.
            if isinstance(seed, bool) or not isinstance(seed, (int, float)) or not 0 <= seed < 2**32 \
                    or not float(seed).is_integer():
                errors["seed"] = "must be a whole number between 0 and 4294967295"
            else:
                values["seed"] = int(seed)
        stop = data.get("stop")
        if stop is not None:
            if cls._valid_stop(stop):
                values["stop"] = tuple(stop)
            else:
                errors["stop"] = (
                    f"must be a list of at most {cls.MAX_STOP_SEQUENCES} non-empty strings "
                    f"of at most {cls.MAX_STOP_CHARS} characters"
                )
        values.update(cls._constraint(data, errors))
        if errors:
            raise ParamError(errors)
        return cls(**values)

    @staticmethod
    def _constraint(data: dict[str, Any], errors: dict[str, str]) -> dict[str, Any]:
        """The json_schema or regex, checked as the worker will compile it (inference.structured)."""
        from inference.structured import constraint_problem  # llguidance and jsonschema: only when asked

        given = {name: data[name] for name in ("json_schema", "regex") if data.get(name) is not None}
        if not given:
            return {}
        problem = constraint_problem(given.get("json_schema"), given.get("regex"))
        if problem:
            errors["json_schema" if "json_schema" in given else "regex"] = problem
        return given

    @classmethod
    def _valid_stop(cls, stop: Any) -> bool:
        return (
            isinstance(stop, (list, tuple))
            and len(stop) <= cls.MAX_STOP_SEQUENCES
            and all(isinstance(s, str) and 0 < len(s) <= cls.MAX_STOP_CHARS for s in stop)
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["stop"] = list(self.stop)
        for name in ("json_schema", "regex"):
            if data[name] is None:
                del data[name]
        return data


@dataclass(frozen=True)
class ModelSpec:
    """What a worker loads: a catalogue entry reduced to what inference needs."""

    slug: str
    source: str = ""  # a local folder or file, or a Hugging Face repo id in the local cache
    engine: str = "transformers"  # one of ENGINES
    base: bool = False  # a base model: the prompt as plain text, never a chat template
    gguf_file: str = ""  # a GGUF file inside `source`, if the weights are GGUF
    kind: str = "full"
    precision: str = "auto"
    context_length: int = 0  # 0: take it from the model's config
    # speculative kind: the draft model (same tokenizer); no draft source means
    # prompt-lookup decoding. 0 speculative tokens: the engine's default.
    draft_source: str = ""
    draft_gguf_file: str = ""
    draft_kind: str = "full"
    num_speculative_tokens: int = 0
    memory_mb: float = 0  # the orchestrator reserves this much until the worker reports its measured figure
    # openai engine: where the model is served, and the NAME of the environment variable
    # holding its key (the key itself never leaves the worker's environment), or the key the
    # catalogue stores, sealed: opened only by the backend that spawns the worker, into the
    # worker's environment (orchestration/sealing.py).
    base_url: str = ""
    remote_model: str = ""
    api_key_env: str = ""
    api_key_sealed: str = ""
    max_concurrency: int = 0  # requests at once (0: the worker's batch size)
    server_command: str = ""  # server engine: the command template (inference.managed)
    cpus: float = 2.0  # logical CPUs the worker asks Ray for; on Ray it runs that many threads
    gpus: float = 0.0  # GPUs the worker asks Ray for: a fraction (0.5) or a whole number; 0: none

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str) -> ModelSpec:
        return cls(**json.loads(raw))


@dataclass(frozen=True)
class Job:
    generation_id: str
    messages: list[dict[str, str]]  # chat messages: {"role", "content"}
    params: SamplingParams = field(default_factory=SamplingParams)
    enqueued_at: float = field(default_factory=time.time)

    def to_json(self) -> str:
        data = asdict(self)
        return json.dumps(data)

    @classmethod
    def from_json(cls, raw: str | bytes) -> Job:
        data = json.loads(raw)
        params = SamplingParams.from_dict(data.get("params"))
        messages = data["messages"]
        ROLES = ("system", "user", "assistant")
        if not isinstance(messages, list) or not all(
            isinstance(m, dict) and isinstance(m.get("content"), str) and m.get("role") in ROLES for m in messages
        ):
            raise ValueError("messages must be a list of {role, content}")
        return cls(
            generation_id=str(data["generation_id"]),
            messages=messages,
            params=params,
            enqueued_at=float(data.get("enqueued_at") or time.time()),
        )


class Keys:
    """Every Redis key the application uses, under one prefix (tests use their own)."""

    def __init__(self, prefix: str = "arena"):
        self.prefix = prefix

    def stream(self, generation_id: str) -> str:
        return f"{self.prefix}:gen:{generation_id}:events"

    def cancel(self, generation_id: str) -> str:
        return f"{self.prefix}:gen:{generation_id}:cancel"

    def suite_run_lock(self, run_id: str) -> str:
        """Held by the suite run's step under way (arena.suite_runs.runner): one step of a run at a time."""
        return f"{self.prefix}:suite-run:{run_id}:lock"

    def admission_lock(self) -> str:
        """Held by the one pass of the fair line under way (arena.generations.admission)."""
        return f"{self.prefix}:admission:lock"

    def viewers(self, generation_id: str) -> str:
        return f"{self.prefix}:gen:{generation_id}:viewers"

    def watch(self, generation_id: str) -> str:
        """Renewed by the task following the generation; its absence means nobody follows it
        (the sweeper ends such generations) or, seen gone by that task, that Redis restarted."""
        return f"{self.prefix}:gen:{generation_id}:watch"

    def ws_hub_wake(self, hub_id: str) -> str:
        """A server process's stream hub's own wake-up stream (arena/streams.py StreamHub)."""
        return f"{self.prefix}:ws-hub:{hub_id}"

    def worker(self, worker_id: str) -> str:
        """Hash: state, slug, pid, error, in_flight, last_used, ready_at, ..."""
        return f"{self.prefix}:worker:{worker_id}"

    def worker_heartbeat(self, worker_id: str) -> str:
        return f"{self.prefix}:worker:{worker_id}:heartbeat"

    def worker_jobs(self, worker_id: str) -> str:
        return f"{self.prefix}:worker:{worker_id}:jobs"

    def variant(self, slug: str) -> str:
        """Hash: worker_id, state, error, at: which worker serves `slug` and how it is
        doing. Written by the orchestrator only (the single writer of placements)."""
        return f"{self.prefix}:variant:{slug}"

    def orchestrator_inbox(self) -> str:
        return f"{self.prefix}:orchestrator:inbox"

    def lease(self, request_id: str) -> str:
        """Hash: state (waiting|granted|refused), workers (JSON slug -> worker id), reason."""
        return f"{self.prefix}:lease:{request_id}"

    def orchestrator_queue(self) -> str:
        """Hash: variant slug or lease id -> JSON {"position", "reason"} while it waits for memory."""
        return f"{self.prefix}:orchestrator:queue"

    def orchestrator_status(self) -> str:
        """JSON: the orchestrator's view of nodes, workers and queue, rewritten every tick."""
        return f"{self.prefix}:orchestrator:status"

    def orchestrator_heartbeat(self) -> str:
        return f"{self.prefix}:orchestrator:heartbeat"

    def orchestrator_epoch(self) -> str:
        """Set once per Redis lifetime: finding it gone means Redis restarted empty."""
        return f"{self.prefix}:orchestrator:epoch"

    def logged_out(self) -> str:
        """Pub/sub channel: the digest of a session that logged out, or of a user deactivated;
        every server process closes that session's or user's WebSockets (arena/accounts/sockets.py)."""
        return f"{self.prefix}:sessions:logged-out"

    def socket_slots(self, user_id) -> str:
        """Sorted set: a user's live WebSockets across server processes, each scored by when its
        slot lapses unless renewed (arena/accounts/socket_cap.py)."""
        return f"{self.prefix}:limits:sockets:{user_id}"

    def rate_limit(self, user_id) -> str:
        """Sorted set: the times of a user's recent starts (arena/generations/limits.py's sliding window)."""
        return f"{self.prefix}:limits:rate:{user_id}"

    def login_failures(self) -> str:
        """The stem of the login throttle's sorted sets of failure times, one per (username,
        browser or address), per address and per username (arena/accounts/throttle.py)."""
        return f"{self.prefix}:login"

    def preparation(self, slug: str) -> str:
        """Hash: state, line, done, total, eta_s, updated_at: a catalogue entry being prepared
        (AWQ-quantised) ahead of its first use; it expires soon after its preparer stops."""
        return f"{self.prefix}:preparation:{slug}"

    def verdict_generation(self) -> str:
        """Counter bumped whenever a verdict lands or changes what counts: the leaderboard's
        cached results are keyed by it (arena/leaderboard/cache.py)."""
        return f"{self.prefix}:leaderboard:verdict-generation"

    def share_views(self) -> str:
        """Hash: share link id -> views not yet added to the database (arena/history/view_counts.py)."""
        return f"{self.prefix}:share-views:pending"


def plain_text(messages: list[dict[str, str]]) -> str:
    """A conversation as a base model gets it: the messages' text, no chat template."""
    return "\n\n".join(m["content"] for m in messages)


def event(kind: str, **fields: Any) -> dict[FieldT, EncodableT]:
    """One stream entry, for XADD: Redis streams hold flat string maps, so the body is JSON."""
    return {"type": kind, "t": repr(time.time()), "data": json.dumps(fields)}


class StreamedText:
    """An answer's text from its TOKEN events in stream order, each character once: a copy (one
    written again after a Redis restart) adds nothing, and `gap` is set once a token came whose
    text follows text that never came (a Redis restarted empty loses what it held). After a gap
    the text keeps what came (the best a partial answer can be). An event without `at` (a worker
    before it) follows on."""

    def __init__(self):
        self.parts: list[str] = []
        self.end = 0  # characters of the answer up to the end of the furthest token seen
        self.gap = False

    def add(self, ev: Mapping[str, Any]) -> str:
        """The part of `ev`'s text not seen before ("" for a copy), now kept."""
        text = ev.get("text") or ""
        start = self.end if ev.get("at") is None else int(ev["at"])
        if start > self.end:
            self.gap = True
        new = text[max(0, self.end - start):]
        self.end = max(self.end, start + len(text))
        if new:
            self.parts.append(new)
        return new

    @property
    def text(self) -> str:
        return "".join(self.parts)


def streamed_text(events: Iterable[Mapping[str, Any]]) -> str:
    """The text of a stream's TOKEN events (StreamedText)."""
    streamed = StreamedText()
    for ev in events:
        if ev.get("type") == TOKEN:
            streamed.add(ev)
    return streamed.text


def parse_event(entry: Mapping[Any, Any]) -> dict[str, Any]:
    """The inverse of `event`, from a stream entry as redis-py returns it."""
    get = lambda k: entry.get(k) if k in entry else entry.get(k.encode())  # noqa: E731
    as_str = lambda v: v.decode() if isinstance(v, bytes) else v  # noqa: E731
    body = json.loads(as_str(get("data")) or "{}")
    body["type"] = as_str(get("type"))
    body["t"] = float(as_str(get("t")))
    return body


def request_metrics(
    *,
    arrival_time: float,
    first_scheduled_time: float | None,
    first_token_time: float | None,
    last_token_time: float | None,
    finished_time: float,
    prompt_tokens: int,
    generated_tokens: int,
    shared_with_max: int = 0,
    shared_with_mean: float = 0.0,
) -> dict[str, Any]:
    """Per-request metrics in the shape of vLLM's RequestMetrics, plus derived rates. Unlike vLLM's,
    `ttft_s` counts from when the worker began the request (`first_scheduled_time`): the time the job
    waited in the worker's queue is `time_in_queue`, apart (see `time_to_first_token`).

    `shared_with_max` / `shared_with_mean`: how many other requests the same worker decoded alongside
    this one (at most, and on average over its decode steps). A rate measured while others shared the
    worker is not the model's speed alone: pages say so, and speed charts prefer answers with 0."""
    ttft = (first_token_time - (first_scheduled_time or arrival_time)) if first_token_time else None
    decode_s = (last_token_time - first_token_time) if first_token_time and last_token_time else 0.0
    decode_rate = (generated_tokens - 1) / decode_s if generated_tokens > 1 and decode_s > 0 else None
    return {
        "arrival_time": arrival_time,
        "first_scheduled_time": first_scheduled_time,
        "first_token_time": first_token_time,
        "last_token_time": last_token_time,
        "finished_time": finished_time,
        "time_in_queue": (first_scheduled_time - arrival_time) if first_scheduled_time else None,
        "prompt_tokens": prompt_tokens,
        "generated_tokens": generated_tokens,
        "ttft_s": ttft,
        "decode_tokens_per_s": decode_rate,
        "shared_with_max": shared_with_max,
        "shared_with_mean": round(shared_with_mean, 2),
    }


def shared_with(metrics: dict[str, Any]) -> int | None:
    """How many other requests shared the worker while this one decoded, at most (None: a worker
    from before this was measured, or no metrics)."""
    value = metrics.get("shared_with_max")
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def time_to_first_token(metrics: dict[str, Any]) -> float | None:
    """Seconds from when the worker began the request to its first token, from a terminal event's
    metrics (an older worker's `ttft_s` counted from the job's arrival: the raw times say it alike)."""
    first = metrics.get("first_token_time")
    began = metrics.get("first_scheduled_time") or metrics.get("arrival_time")
    if not first or not began:
        return None
    return max(0.0, first - began)
