"""The server engine (inference.managed): a worker starts an OpenAI-compatible server from
the entry's command, serves through it and stops it. Real processes: a real llama.cpp server
(`python -m inference.llamacpp` on the packaged SmolLM2 GGUF) started by a real worker on real
Redis. vLLM cannot be installed here: its command is checked as it would be run."""

from __future__ import annotations

import os
import shlex
import sys
import time

import pytest

from inference import config, managed, protocol
from inference.protocol import Keys, ModelSpec, SamplingParams
from inference.sources import PACKAGED_SMOLLM2

from .workers import serve_worker

pytestmark = pytest.mark.slow

PYTHON = shlex.quote(sys.executable)
LLAMACPP = f"{PYTHON} -m inference.llamacpp --model {{model}} --port {{port}} --api-key {{api_key}}"
VLLM = ("vllm serve {model} --host {host} --port {port} --api-key {api_key} --gpu-memory-utilization {fraction} "
        "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 4}'")
ALLOWED = {config.SERVER_COMMANDS_ENV: "1"}


def server_spec(template: str, **fields) -> str:
    return ModelSpec(slug="managed", engine="server", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1],
                     server_command=template, memory_mb=500, **fields).to_json()


def test_a_worker_starts_a_llamacpp_server_serves_through_it_and_stops_it(redis_url, tmp_path):
    with serve_worker(server_spec(LLAMACPP), redis_url, tmp_path, env=ALLOWED) as served:
        status = served.status()
        assert float(status["memory_mb"]) > 90 and float(status["load_s"]) > 0  # the server holds the weights
        done = served.events(served.push(params=SamplingParams(temperature=0.0, max_new_tokens=16)))[-1]
        assert done["type"] == protocol.DONE and done["text"].strip()
        assert done["metrics"]["generated_tokens"] > 0
        server_pids = managed.descendants(served.worker.proc.pid)
        assert server_pids and "--api-key [key]" in served.worker.log_text()  # logged without its key
    deadline = time.monotonic() + 15
    while any(os.path.exists(f"/proc/{pid}") for pid in server_pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in server_pids)  # stopped with its worker


@pytest.mark.parametrize(("template", "env", "words"), [
    (LLAMACPP, {}, "Server commands are off on this machine"),
    (f"{PYTHON} -c 'import sys; sys.exit(3)' {{port}}", ALLOWED,
     "exited with code 3 before it was ready"),
    ("/no/such/server --port {port}", ALLOWED, "could not start: No such file or directory (/no/such/server)"),
])
def test_a_server_that_cannot_start_fails_the_load_with_the_reason(start_worker, redis_prefix, redis_client,
                                                                   template, env, words):
    worker = start_worker(server_spec(template), redis_prefix, env=env)
    assert worker.proc.wait(timeout=60) == 3
    status = redis_client.hgetall(Keys(redis_prefix).worker(worker.worker_id))
    assert status["state"] == protocol.W_FAILED and words in status["error"], status["error"]


def test_the_vllm_recipe_becomes_this_command():
    assert managed.check_template(VLLM) is None
    args = managed.command(VLLM, port=8123, api_key="k3y", model="Qwen/Qwen2.5-1.5B-Instruct", fraction=0.4512)
    assert args == ["vllm", "serve", "Qwen/Qwen2.5-1.5B-Instruct", "--host", "127.0.0.1", "--port", "8123",
                    "--api-key", "k3y", "--gpu-memory-utilization", "0.45",
                    "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 4}']


def test_filled_in_values_never_become_more_arguments():
    args = managed.command("serve {model} --port {port}", port=1, api_key="", model="a b; rm -rf /", fraction=0.5)
    assert args == ["serve", "a b; rm -rf /", "--port", "1"]


@pytest.mark.parametrize(("template", "words"), [
    ("vllm serve m", "must pass {port}"),
    ("vllm serve {modle} --port {port}", "Unknown placeholder {modle}"),
    ("vllm 'unclosed --port {port}", "cannot be read"),
    ("", "empty"),
])
def test_bad_templates_are_named(template, words):
    assert words in managed.check_template(template)


def test_the_fraction_is_the_estimate_over_this_machines_memory():
    assert managed.memory_fraction(20_000, 80_000) == 0.25
    assert managed.memory_fraction(200_000, 80_000) == 0.95 and managed.memory_fraction(1, 80_000) == 0.05
    assert 0.05 <= managed.memory_fraction(500) <= 0.95  # this machine's RAM (no GPU here)
