"""Our llama.cpp and openai engines against xllamacpp called directly, side by side in one run.

On the packaged SmolLM2 Q4_1 file, greedy, the same prompts, the same thread count for every
engine (printed):
- single: one stream's decode tokens/s through our worker (a real `inference.worker` process
  with engine=llamacpp, which calls llama.cpp in-process through inference.llamacpp_decoder,
  read from its Redis stream as the app reads it) and through xllamacpp's Server in this
  process (handle_chat_completions with a streaming callback, nothing else per token);
- batch16: aggregate tokens/s of 16 concurrent requests, each way (16 slots both);
- adapter: one stream's decode tokens/s through a worker with engine=openai reading an
  xllamacpp HTTP server, over the same server read directly with the `openai` client.

Run by bench/engine.py (`make bench-engine`) as a process of its own, so that OpenMP (which
torch starts in bench/engine.py's process) runs here as in our workers: waiting passively unless
OMP_WAIT_POLICY says otherwise. `python bench/llamacpp.py [THREADS]` runs it alone; its last
line is JSON.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from inference import llamacpp, protocol  # noqa: E402
from inference.protocol import Job, Keys, ModelSpec, SamplingParams  # noqa: E402
from inference.sources import PACKAGED_SMOLLM2  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
NEW_TOKENS = 128
PROMPTS = [
    "Write a short story about a robot who learns to paint.",
    "Explain how a refrigerator works, step by step.",
    "Describe a walk through a forest in autumn.",
]
BATCH = 16
BATCH_TOKENS = 64
SPEC = ModelSpec(slug="smollm2-llamacpp", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1],
                 engine="llamacpp", max_concurrency=BATCH)


def rate(times: list[float]) -> float:
    return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 and times[-1] > times[0] else 0.0


def user(prompt: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": prompt}]


# ---------------------------------------------------------------- xllamacpp, called directly


def raw_server(threads: int, parallel: int):
    """xllamacpp's Server on the same file, as our worker configures it, with no key (OpenMP's
    wait policy is set once, by main). Its HTTP listener serves the adapter comparison."""
    import xllamacpp

    params = llamacpp.server_params(xllamacpp, SPEC, str(llamacpp.resolve_source(*PACKAGED_SMOLLM2)),
                                    parallel=parallel, threads=threads, api_key="")
    params.api_keys = []
    return xllamacpp.Server(params)


def raw_stream(server, prompt: str, max_tokens: int) -> list[float]:
    """When each content chunk of one streamed chat completion arrived."""
    times: list[float] = []

    def on_chunk(chunk):
        data = json.loads(chunk) if isinstance(chunk, (str, bytes)) else chunk
        now = time.time()
        times.extend(now for choice in data.get("choices") or [] if (choice.get("delta") or {}).get("content"))

    server.handle_chat_completions({"messages": user(prompt), "max_tokens": max_tokens, "temperature": 0,
                                    "stream": True}, on_chunk)
    return times


def raw_batch(server, count: int) -> float:
    counts = [0] * count

    def one(i: int) -> None:
        counts[i] = len(raw_stream(server, batch_prompt(i), BATCH_TOKENS))

    started = time.perf_counter()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - started)


def batch_prompt(i: int) -> str:
    return f"Tell me fact number {i + 1} about the ocean, in a few sentences."


# ---------------------------------------------------------------- our worker


class Worker:
    """A real worker process serving `spec`, and reading its jobs' events from Redis."""

    def __init__(self, spec: ModelSpec, threads: int, redis_url: str):
        self.keys = Keys(f"bench-{uuid.uuid4().hex[:8]}")
        self.client = redis.Redis.from_url(redis_url, decode_responses=True)
        self.id = f"w-{uuid.uuid4().hex[:6]}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "inference.worker", "--worker-id", self.id, "--spec", spec.to_json(),
             "--redis-url", redis_url, "--prefix", self.keys.prefix],
            cwd=ROOT, env={**os.environ, "ARENA_WORKER_THREADS": str(threads), "ARENA_LLAMACPP_VERBOSITY": "0"},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            state = self.client.hget(self.keys.worker(self.id), "state")
            if state == protocol.W_READY:
                return
            if state == protocol.W_FAILED or self.proc.poll() is not None:
                raise RuntimeError(f"worker failed: {self.client.hgetall(self.keys.worker(self.id))}")
            time.sleep(0.1)
        raise RuntimeError("worker did not start")

    def push(self, prompt: str, max_tokens: int) -> str:
        job = Job(generation_id=uuid.uuid4().hex, messages=user(prompt),
                  params=SamplingParams(temperature=0.0, max_new_tokens=max_tokens))
        self.client.rpush(self.keys.worker_jobs(self.id), job.to_json())
        return job.generation_id

    def token_times(self, generation_id: str) -> list[float]:
        """The `t` of each token event (written by the worker when it published the token)."""
        key, last, times = self.keys.stream(generation_id), "0-0", []
        while True:
            for _, entries in self.client.xread({key: last}, block=1000, count=500) or []:
                for entry_id, fields in entries:
                    last = entry_id
                    event = protocol.parse_event(fields)
                    if event["type"] == protocol.TOKEN:
                        times.append(event["t"])
                    elif event["type"] in protocol.TERMINAL_EVENTS:
                        if event["type"] != protocol.DONE:
                            raise RuntimeError(f"generation ended {event}")
                        return times

    def single(self, prompt: str) -> list[float]:
        return self.token_times(self.push(prompt, NEW_TOKENS))

    def batch(self, count: int) -> float:
        started = time.perf_counter()
        ids = [self.push(batch_prompt(i), BATCH_TOKENS) for i in range(count)]
        tokens = sum(len(self.token_times(g)) for g in ids)
        return tokens / (time.perf_counter() - started)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        for key in self.client.scan_iter(match=f"{self.keys.prefix}:*", count=500):
            self.client.delete(key)


@contextmanager
def worker(spec: ModelSpec, threads: int, redis_url: str):
    w = Worker(spec, threads, redis_url)
    try:
        yield w
    finally:
        w.stop()


def openai_client_stream(base_url: str, prompt: str) -> list[float]:
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key="none", max_retries=0)
    stream = client.chat.completions.create(model="m", messages=user(prompt), max_tokens=NEW_TOKENS,
                                            temperature=0, stream=True)
    return [time.time() for chunk in stream if chunk.choices and chunk.choices[0].delta.content]


# ---------------------------------------------------------------- the comparisons


def interleaved(*measures) -> list[float]:
    """Each measure's mean-of-best single-stream rate, rounds interleaved so both see the same load."""
    best = [[0.0] * len(PROMPTS) for _ in measures]
    for _ in range(ROUNDS):
        for i, prompt in enumerate(PROMPTS):
            for m, measure in enumerate(measures):
                best[m][i] = max(best[m][i], rate(measure(prompt)))
    return [statistics.mean(b) for b in best]


def worker_vs_raw(threads: int, redis_url: str) -> dict:
    server = raw_server(threads, parallel=BATCH)
    with worker(SPEC, threads, redis_url) as ours:
        raw1, ours1 = interleaved(lambda p: raw_stream(server, p, NEW_TOKENS), ours.single)
        raw16, ours16 = raw_batch(server, BATCH), ours.batch(BATCH)
        raw_b1, ours_b1 = raw_batch(server, 1), ours.batch(1)
    return {"raw_single": raw1, "ours_single": ours1, "raw_batch16": raw16, "ours_batch16": ours16,
            "raw_batch1": raw_b1, "ours_batch1": ours_b1}


def adapter_vs_direct(threads: int, redis_url: str) -> dict:
    """A worker with engine=openai reading an xllamacpp HTTP server, against the openai client on it."""
    server = raw_server(threads, parallel=4)
    base_url = server.listening_address + "/v1"
    endpoint = ModelSpec(slug="endpoint", engine="openai", base_url=base_url, remote_model="m")
    with worker(endpoint, threads, redis_url) as adapter:
        direct1, adapter1 = interleaved(lambda p: openai_client_stream(base_url, p), adapter.single)
    return {"direct_openai_single": direct1, "adapter_single": adapter1}


def main(threads: int, redis_url: str) -> dict:
    llamacpp.wait_passively()  # before the first server: the workers' OpenMP policy, here too
    return {"threads": threads, "omp_wait_policy": os.environ["OMP_WAIT_POLICY"],
            "system_info": llamacpp.system_info().strip(),
            **worker_vs_raw(threads, redis_url), **adapter_vs_direct(threads, redis_url)}


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else os.cpu_count() or 1
    print(json.dumps(main(count, os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))))
