"""Cold start and the cost of the streaming path, measured in one run.

Starts the whole application (as `make run` does) on this machine and, with the
packaged SmolLM2 and a WebSocket client that logs in like a browser:
- cold start: from Send to the first token on the socket, with no worker running,
  first with an empty model cache (GGUF dequantised and converted), then again on a
  fresh application whose cache holds the converted model;
- warm time to first token, with the worker already loaded;
- streaming: tokens/s seen by the WebSocket client over tokens/s measured inside the
  worker for the same generations (the path costs under 5% when the ratio is >= 0.95),
  and the relay latency from the worker's XADD to the client's receive.

Prints a table, then one JSON object as its last line.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import websockets.sync.client as ws_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.app import running_app

REDIS_URL = "redis://127.0.0.1:6379/0"
STORY = "Write a long, detailed story about a lighthouse keeper and a storm."
STREAM_RUNS = 3
STREAM_TOKENS = 200


def generate(app, session, prompt: str, **params) -> dict:
    """Send from the page, follow the socket; client-side timings and the worker's metrics."""
    sent = time.time()
    gen_id = app.start_from_page(session, prompt, **params)
    arrivals, lags, final = [], [], None
    with ws_client.connect(app.ws_url(gen_id, json_frames=True), additional_headers=app.ws_headers(session)) as sock:
        while final is None:
            event = json.loads(sock.recv(timeout=600))
            now = time.time()
            if event["type"] == "token":
                arrivals.append(now)
                lags.append(now - event["t"])
            elif event["type"] in ("done", "failed", "cancelled"):
                final = event
    if final["type"] != "done":
        raise SystemExit(f"generation ended {final['type']}: {final.get('reason')}")
    metrics = final["metrics"]
    span = arrivals[-1] - arrivals[0] if len(arrivals) > 1 else 0
    return {
        "send_to_first_token_s": arrivals[0] - sent,
        "client_tokens_per_s": (len(arrivals) - 1) / span if span else None,
        "worker_tokens_per_s": metrics["decode_tokens_per_s"],
        "tokens": len(arrivals),
        "relay_lag_s": lags,
    }


def cold_start(cache_dir: Path) -> tuple[float, object]:
    with running_app(REDIS_URL, Path(tempfile.mkdtemp(prefix="bench-app-")), ARENA_MODEL_CACHE=str(cache_dir)) as app:
        session = app.login()
        first = generate(app, session, "Say hello.", temperature="0", max_new_tokens="8")
        warm = generate(app, session, "Say hello.", temperature="0", max_new_tokens="8")
        streams = [
            generate(app, session, STORY, temperature="0.8", seed=str(i), max_new_tokens=str(STREAM_TOKENS))
            for i in range(STREAM_RUNS)
        ]
    return first["send_to_first_token_s"], warm["send_to_first_token_s"], streams


def main() -> None:
    cache = Path(tempfile.mkdtemp(prefix="bench-model-cache-"))
    cold_first, warm_ttft, streams = cold_start(cache)
    cold_cached, _, _ = cold_start(cache)
    client_tps = statistics.mean(s["client_tokens_per_s"] for s in streams)
    worker_tps = statistics.mean(s["worker_tokens_per_s"] for s in streams)
    lags = sorted(lag for s in streams for lag in s["relay_lag_s"])
    p50 = lags[len(lags) // 2] * 1000
    p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))] * 1000
    rows = [
        ("cold start, empty model cache (Send -> first token)", f"{cold_first:.2f} s"),
        ("cold start, converted model cached", f"{cold_cached:.2f} s"),
        ("warm time to first token", f"{warm_ttft:.3f} s"),
        (f"tokens/s inside the worker ({STREAM_RUNS} x {STREAM_TOKENS} tokens)", f"{worker_tps:.2f}"),
        ("tokens/s seen by the WebSocket client", f"{client_tps:.2f}"),
        ("client over worker", f"{client_tps / worker_tps:.3f}"),
        ("relay lag worker -> client, p50 / p99", f"{p50:.1f} ms / {p99:.1f} ms"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(json.dumps({
        "cold_start_first_s": round(cold_first, 2),
        "cold_start_cached_s": round(cold_cached, 2),
        "cached_over_first_cold_start": round(cold_cached / cold_first, 3),
        "warm_ttft_s": round(warm_ttft, 3),
        "worker_tokens_per_s": round(worker_tps, 2),
        "ws_client_tokens_per_s": round(client_tps, 2),
        "ws_over_worker_tokens_per_s": round(client_tps / worker_tps, 3),
        "relay_lag_p50_ms": round(p50, 1),
        "relay_lag_p99_ms": round(p99, 1),
    }))


if __name__ == "__main__":
    main()
