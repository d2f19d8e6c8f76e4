"""The llamacpp engine: a GGUF file served by llama.cpp inside the worker, called in-process.

xllamacpp runs llama.cpp's server context in this process, reading the GGUF as shipped
(no conversion, no dequantisation), with continuous batching over `parallel` slots
sharing one KV cache. The worker calls it directly (`inference.llamacpp_decoder`: each
request's chunks come from llama.cpp's callback, no HTTP and no server-sent events), so
cancelling a request ends its call and llama.cpp frees that slot alone. xllamacpp always
opens llama.cpp's HTTP listener too; the worker binds it to 127.0.0.1 on a free port with
a random API key and one HTTP thread, and nothing reads it.

`python -m inference.llamacpp` is llama.cpp's HTTP server on its own (the `server` engine's
managed servers and their tests start it).

Speculative kind: a draft GGUF of the same tokenizer when the entry names one, else
llama.cpp's n-gram lookup over the prompt and the answer so far (its counterpart of
our prompt-lookup decoding).
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from inference import config
from inference.decoding import WARM_UP_MESSAGES
from inference.llamacpp_decoder import LlamaCppEngine
from inference.protocol import ModelSpec, SamplingParams
from inference.sources import resolve_source

log = logging.getLogger(__name__)

DEFAULT_CONTEXT = 8192  # tokens of KV cache shared by all slots, unless the entry sets its own
# llama.cpp's CPU build runs its threads under OpenMP, whose threads spin while they wait. Two
# workers on the same cores (both sides of every comparison) then starve each other: measured on
# 2 cores, two llama.cpp processes of 2 threads decoded 8 tokens/s each spinning and 47 each
# waiting passively (one alone: ~97 spinning, ~60 passive). The arena runs models side by side,
# so its workers wait passively unless the operator sets OMP_WAIT_POLICY.
OMP_WAIT_POLICY = "PASSIVE"


class LlamaCppError(Exception):
    """The server could not start; the message is meant for a user."""


@dataclass
class LlamaCppServer:
    server: Any  # xllamacpp.Server: stops when the last reference goes
    engine: LlamaCppEngine
    context_length: int
    load_s: float
    weight_bytes: int
    listener_key: str = field(default="", repr=False)  # of the HTTP listener nothing here reads (tests do)


def start(spec: ModelSpec, *, parallel: int, threads: int) -> LlamaCppServer:
    """llama.cpp serving `spec` in this process, warmed up and ready for requests."""
    wait_passively()
    import xllamacpp

    started = time.perf_counter()
    path = resolve_source(spec.source, spec.gguf_file)
    if path.suffix.lower() != ".gguf":
        raise LlamaCppError(f"The llamacpp engine serves GGUF files; '{spec.source}' is not one.")
    key = secrets.token_urlsafe(24)
    params = server_params(xllamacpp, spec, str(path), parallel=parallel, threads=threads, api_key=key)
    params.n_threads_http = 1  # the listener xllamacpp always opens: nothing here reads it
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:  # a file llama.cpp cannot read, an unknown architecture, no memory
        raise LlamaCppError(f"llama.cpp could not load {path.name}: {exc}") from exc
    if not server.listening_address:
        raise LlamaCppError(f"llama.cpp could not load {path.name} (see the worker's log).")
    engine = LlamaCppEngine(server, model=path.name, base=spec.base, max_concurrency=parallel)
    warm_up(engine)
    weight_bytes = path.stat().st_size + (_draft_size(spec) or 0)
    return LlamaCppServer(server, engine, params.n_ctx, time.perf_counter() - started, weight_bytes, key)


def server_params(xllamacpp: Any, spec: ModelSpec, path: str, *, parallel: int, threads: int, api_key: str) -> Any:
    """llama.cpp's CommonParams for `spec` (split out so tests can read them without a model)."""
    params = xllamacpp.CommonParams()
    params.model.path = path
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # a free port, read back from listening_address
    params.api_keys = [api_key]
    params.n_parallel = max(1, parallel)
    params.n_ctx = spec.context_length or DEFAULT_CONTEXT
    params.kv_unified = True  # every slot may use the whole context, one cache for all
    params.cont_batching = True
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.endpoint_metrics = False
    params.verbosity = config.current().llamacpp_verbosity
    if spec.kind == "speculative":
        _speculative(xllamacpp, params.speculative, spec)
    return params


def warm_up(engine: LlamaCppEngine) -> None:
    """One one-token answer before the worker says it is ready (decoding.WARM_UP_MESSAGES): llama.cpp's
    first request's one-time costs would otherwise land on the first user's time to first token, and a
    cold start's first match look slow even with the load counted apart."""
    route, body = engine.request(WARM_UP_MESSAGES,
                                 SamplingParams(temperature=0.0, max_new_tokens=1))  # as a job's, chat template and all
    body = {**body, "stream": False}
    body.pop("stream_options", None)
    answer = engine.handler(route)(body)
    if "error" in answer:  # only a head start: the first request pays it instead
        log.warning("llama.cpp's warm-up request failed: %s", answer["error"])


def wait_passively() -> None:
    """OMP_WAIT_POLICY for this process, before OpenMP starts (the first llama.cpp import)."""
    os.environ.setdefault("OMP_WAIT_POLICY", OMP_WAIT_POLICY)


def _speculative(xllamacpp: Any, speculative: Any, spec: ModelSpec) -> None:
    kinds = xllamacpp.common_speculative_type
    if spec.draft_source:
        speculative.draft.mparams.path = str(resolve_source(spec.draft_source, spec.draft_gguf_file))
        speculative.types = [kinds.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
        if spec.num_speculative_tokens:
            speculative.draft.n_max = spec.num_speculative_tokens
    else:
        speculative.types = [kinds.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]


def _draft_size(spec: ModelSpec) -> int | None:
    if spec.kind != "speculative" or not spec.draft_source:
        return None
    return resolve_source(spec.draft_source, spec.draft_gguf_file).stat().st_size


def system_info() -> str:
    """llama.cpp's build and CPU features (AVX2, FMA, ...), for the README and bench."""
    import xllamacpp

    return str(xllamacpp.get_system_info())


def main(argv: list[str] | None = None) -> int:
    """A standalone llama.cpp server on 127.0.0.1 (for the server engine, or by hand):

        python -m inference.llamacpp --model FILE.gguf --port 8081 [--api-key KEY] [--threads N]

    It serves the OpenAI API until SIGTERM or SIGINT.
    """
    import argparse
    import signal
    import threading

    parser = argparse.ArgumentParser(prog="python -m inference.llamacpp", description=main.__doc__)
    parser.add_argument("--model", required=True, help="a GGUF file")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--api-key", default="")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--context", type=int, default=DEFAULT_CONTEXT)
    args = parser.parse_args(argv)
    wait_passively()
    import xllamacpp

    spec = ModelSpec(slug="standalone", source=args.model, engine="llamacpp", context_length=args.context)
    params = server_params(xllamacpp, spec, args.model, parallel=args.parallel, threads=args.threads,
                           api_key=args.api_key)
    params.port = args.port
    params.api_keys = [args.api_key] if args.api_key else []
    server = xllamacpp.Server(params)  # noqa: F841 - serves while referenced
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"llama.cpp serving {args.model} on http://127.0.0.1:{args.port}/v1", flush=True)
    stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
