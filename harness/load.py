"""The application under load: many real WebSocket viewers on many concurrent generations.

Starts the whole application (as `make run` does) with the packaged SmolLM2, starts
`--generations` generations at once through the JSON API (spread over `--users` users,
greedy, `--max-new-tokens` each, one batched worker decoding them all together) and
attaches `--viewers` WebSocket clients to them, logged in with session cookies as a
browser is and reading the same HTML fragments htmx gets. The clients run in `--clients`
processes (default 2), each starting and watching its share of the generations on its own
event loop: one process alone woke late by up to ~100-160 ms at p99 under this load, which
counted as server latency.
About a third of the viewers join late: once their generation has streamed a random
number of tokens, or after it ended, so they get part or all of it from the replay.

Measured in one run:
- delivered_over_generated: token fragments every viewer received (replayed plus live,
  told apart and checked by their `data-n` index) over the tokens the worker generated
  (the stored Generation.generated_tokens) times that generation's viewers. Exactly 1.0
  means nothing was lost or duplicated; each viewer's text must also equal the stored text;
- extra latency from worker to browser, p50 and p99: for every token a viewer received
  live (not replayed), its receive time minus the time the worker wrote the token event
  (the event's own timestamp, read back from the Redis Stream); same machine, same clock.
  It includes the clients' own delay: their event loops' lateness is reported beside it
  (client_loop_lag_p50_ms / _p99_ms, over all client processes);
- errors: failed generations, refused requests, socket errors, early closes or timeouts,
  error notices, and tokens missing, repeated or out of order. It must be 0 below the
  configured limits (the bench raises the application's limits to fit its own load).

Prints the figures, then one JSON object as its last line; exits 1 when a token was lost or
repeated or anything failed.
Usage: python bench/load.py [--viewers 200] [--generations 32] [--max-new-tokens 48] [--clients 2]
                          [--rounds 1] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import math
import multiprocessing
import os
import random
import re
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import redis.asyncio as aioredis
import websockets
from redis import Redis

from harness.app import LiveApp, running_app
from inference import protocol as p
from inference.protocol import Keys

REDIS_URL = "redis://127.0.0.1:6379/0"
MODEL = "smollm2-135m"
PROMPTS = [
    "Write a short poem about the sea.",
    "Explain what a CPU cache is.",
    "List some uses of a paperclip.",
    "Describe a sunrise over the mountains.",
    "Why is the sky blue?",
    "Tell a short story about a robot who learns to paint.",
    "Give advice to someone learning to cook.",
    "What makes a good friend?",
]
POLL_S = 0.1  # how often a generation's progress is read, for the viewers waiting to join late
LATE_EVERY = 3  # every third viewer of a generation joins late

# One fragment of a frame: the output, status or notice element (see arena/playground/fragments.py).
FRAGMENT = re.compile(r'<div id="gen-(output|status|notice)"([^>]*)>(.*?)</div>', re.S)
DATA_N = re.compile(r'data-n="(\d+)"')
DATA_STATE = re.compile(r'data-state="([a-z]+)"')


@dataclass
class Account:
    username: str
    token: str
    headers: dict[str, str]  # the session cookie and Origin a logged-in browser sends


@dataclass
class Run:
    """One generation under load and what the worker wrote for it."""

    gen_id: str
    account: Account
    stream: str
    progress: int = 0  # the last token index in its stream
    ended: bool = False
    stored: dict = field(default_factory=dict)  # the API's final view of it
    token_times: dict[int, float] = field(default_factory=dict)  # token index -> worker's event time
    redis_times: dict[int, float] = field(default_factory=dict)  # token index -> its stream entry's time (Redis's)

    @property
    def generated(self) -> int:
        """Tokens the worker generated, as stored once the generation ended."""
        return (self.stored.get("metrics") or {}).get("generated_tokens") or 0


@dataclass
class View:
    """What one WebSocket viewer received, frame by frame."""

    run: Run
    late: bool
    replay_n: int | None = None  # the last token index the replay (first frame) held
    replay_text: str = ""
    tokens: list[tuple[int, str, float]] = field(default_factory=list)  # live: (index, text, receive time)
    final_state: str = ""
    problems: list[str] = field(default_factory=list)

    def feed(self, frame: str, received_at: float) -> None:
        for kind, attrs, body in FRAGMENT.findall(frame):
            text = html.unescape(body)
            if kind == "output":
                self._output(attrs, text, received_at)
            elif kind == "status":
                state = DATA_STATE.search(attrs)
                if state and state.group(1) in p.TERMINAL_EVENTS:
                    self.final_state = state.group(1)
            elif text.strip():
                self.problems.append(f"error notice: {text.strip()}")

    def _output(self, attrs: str, text: str, received_at: float) -> None:
        n = DATA_N.search(attrs)
        if 'hx-swap-oob="beforeend"' in attrs:
            if n is None:
                self.problems.append("a token fragment without its index")
            else:
                self.tokens.append((int(n.group(1)), text, received_at))
        elif n is not None:  # the replay
            if self.replay_n is not None or self.tokens:
                self.problems.append("a second replay")
            self.replay_n, self.replay_text = int(n.group(1)), text
        # else: the final answer, with the terminal status (rendered as Markdown: checked as streamed text instead)

    def delivered(self) -> int:
        """Token indices received: the replay's, then one per live fragment (the held-back tail excepted)."""
        return (self.replay_n or 0) + len(self.tokens) - self._tail()

    def live_tokens(self) -> list[tuple[int, float]]:
        """(index, receive time) of every token received live, the held-back tail excepted."""
        live = self.tokens[:-1] if self._tail() else self.tokens
        return [(n, at) for n, _text, at in live]

    def _tail(self) -> int:
        """1 when the last live fragment repeats the last index: the worker's held-back text at the end
        (an unfinished UTF-8 sequence) goes out as one more token event with the same index."""
        generated = self.run.generated
        if len(self.tokens) >= 1 and self.tokens[-1][0] == generated:
            before = self.tokens[-2][0] if len(self.tokens) >= 2 else self.replay_n
            return int(before == generated)
        return 0

    def check(self) -> list[str]:
        """Every problem this viewer saw: each token index once and in order, the stored text, done."""
        problems = list(self.problems)
        stored = self.run.stored
        if self.final_state != p.DONE:
            problems.append(f"ended {self.final_state or 'without an outcome'}")
        if self.replay_n is None:
            return [*problems, "no replay frame"]
        expected = self.replay_n + 1
        live = self.tokens[:-1] if self._tail() else self.tokens
        for n, _text, _at in live:
            if n != expected:
                problems.append(f"token {n} where {expected} was due")
            expected = max(expected, n + 1)
        generated = self.run.generated
        if expected - 1 != generated:
            problems.append(f"received up to token {expected - 1} of {generated}")
        text = self.replay_text + "".join(t for _n, t, _at in self.tokens)
        if text != stored.get("text"):
            problems.append("the streamed text differs from the stored text")
        return problems


# --- setting up ----------------------------------------------------------------------------
def create_accounts(app: LiveApp, count: int) -> list[Account]:
    """`count` users with passwords and API tokens (one manage.py call), each logged in through the form."""
    run = uuid.uuid4().hex[:6]
    code = (
        "import json, secrets\n"
        "from django.contrib.auth.models import User\n"
        "from arena.accounts.models import ApiToken\n"
        "out = []\n"
        f"for i in range({count}):\n"
        f"    name, password = f'load-{run}-{{i}}', secrets.token_urlsafe(16)\n"
        "    user = User.objects.create_user(name, password=password)\n"
        "    out.append([name, password, ApiToken.issue(user)])\n"
        "print(json.dumps(out))\n"
    )
    users = json.loads(app.manage("shell", "-c", code).splitlines()[-1])
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(app.url))
    accounts = []
    for name, password, token in users:
        session = app.login(name, password)
        cookie = "; ".join(f"{k}={v}" for k, v in session.cookies.items())
        accounts.append(Account(name, token, {"Cookie": cookie, "Origin": origin}))
    return accounts


def start_generation(app: LiveApp, account: Account, prompt: str, max_new_tokens: int) -> str:
    response = app.api(account.token, "post", "/api/v1/generations", json={
        "model": MODEL, "prompt": prompt, "params": {"temperature": 0, "max_new_tokens": max_new_tokens},
    })
    if response.status_code != 202:
        raise RuntimeError(f"the API refused a generation: {response.status_code} {response.text[:300]}")
    return response.json()["id"]


def warm_up(app: LiveApp, account: Account) -> None:
    """One generation first, so the worker is loaded and the run measures the streaming path, not a cold start."""
    body = app.wait_generation(account.token, start_generation(app, account, "Say hello.", 4), timeout=600)
    if body["status"] != "done":
        raise RuntimeError(f"the warm-up generation ended {body['status']}: {body['failure_reason']}")


# --- the load ------------------------------------------------------------------------------
async def follow_progress(redis: aioredis.Redis, run: Run) -> None:
    """Keep `run.progress` at the last token index written, until the stream ends."""
    while not run.ended:
        for _id, fields in await redis.xrevrange(run.stream, count=1):
            event = p.parse_event(fields)
            if event["type"] == p.TOKEN:
                run.progress = event["n"]
            run.ended = event["type"] in p.TERMINAL_EVENTS
        if not run.ended:
            await asyncio.sleep(POLL_S)


async def loop_lag(samples: list[float]) -> None:
    """How late this process's own event loop wakes (ms): the share of the latency that is the clients' own."""
    while True:
        before = time.perf_counter()
        await asyncio.sleep(POLL_S)
        samples.append((time.perf_counter() - before - POLL_S) * 1000)


async def watch(app: LiveApp, view: View, join_after_tokens: int) -> View:
    """Join (at once, or once `join_after_tokens` have streamed), read until the outcome, then leave."""
    run = view.run
    try:
        while run.progress < join_after_tokens and not run.ended:
            await asyncio.sleep(POLL_S / 2)
        async with websockets.connect(app.ws_url(run.gen_id), additional_headers=run.account.headers,
                                      open_timeout=120, close_timeout=10) as sock:
            while not view.final_state:
                frame = await sock.recv()
                view.feed(frame, time.time())
    except Exception as exc:
        view.problems.append(f"socket: {type(exc).__name__}: {exc}")
    return view


async def load(app: LiveApp, accounts: list[Account], viewers: int, generations: int, max_new_tokens: int,
               seed: int, timeout_s: float, lag: list[float], part: int = 0,
               parts: int = 1) -> tuple[list[Run], list[View], list[str], float]:
    """Start generation g for every g % parts == part, with its viewers, and follow them to the end."""
    rng = random.Random(seed + part)
    keys = Keys(app.prefix)
    redis = aioredis.Redis.from_url(REDIS_URL)
    runs: list[Run] = []
    views: list[View] = []
    tasks: list[asyncio.Task] = []
    problems: list[str] = []
    started = time.time()
    monitor = asyncio.create_task(loop_lag(lag))
    try:
        async with asyncio.timeout(timeout_s):
            for g in range(part, generations, parts):
                account = accounts[g % len(accounts)]
                prompt = PROMPTS[g % len(PROMPTS)]
                try:
                    gen_id = await asyncio.to_thread(start_generation, app, account, prompt, max_new_tokens)
                except Exception as exc:
                    problems.append(f"generation {g}: {exc}")
                    continue
                run = Run(gen_id, account, keys.stream(gen_id))
                runs.append(run)
                tasks.append(asyncio.create_task(follow_progress(redis, run)))
                # This generation's viewers: viewer i watches generation i % generations.
                for k in range(len(range(g, viewers, generations))):
                    late = k % LATE_EVERY == LATE_EVERY - 1
                    view = View(run, late)
                    views.append(view)
                    tasks.append(asyncio.create_task(watch(app, view, rng.randint(1, max_new_tokens) if late else 0)))
            await asyncio.gather(*tasks)
    except TimeoutError:
        problems.append(f"the run did not end within {timeout_s:.0f} s")
        for view in views:
            if not view.final_state:
                view.problems.append("timed out")
    finally:
        for task in (*tasks, monitor):
            task.cancel()
        await asyncio.gather(*tasks, monitor, return_exceptions=True)
        wall_s = time.time() - started
        for run in runs:  # when the worker wrote each token, from the stream itself
            for entry_id, fields in await redis.xrange(run.stream):
                event = p.parse_event(fields)
                if event["type"] == p.TOKEN:
                    run.token_times.setdefault(event["n"], event["t"])
                    run.redis_times.setdefault(event["n"], int(entry_id.split(b"-")[0]) / 1000)
        await redis.aclose()
    return runs, views, problems, wall_s


def load_part(url: str, prefix: str, accounts: list[Account], part: int, parts: int, viewers: int, generations: int,
              max_new_tokens: int, seed: int, timeout_s: float) -> tuple:
    """One client process's share of the load (run in a process of its own)."""
    app = LiveApp(url, {}, Path(), prefix, Redis.from_url(REDIS_URL), "")  # the client's view of the app
    lag: list[float] = []
    runs, views, problems, wall_s = asyncio.run(
        load(app, accounts, viewers, generations, max_new_tokens, seed, timeout_s, lag, part, parts))
    app.redis.close()
    return runs, views, problems, wall_s, lag


def load_in_processes(app: LiveApp, accounts: list[Account], clients: int, viewers: int, generations: int,
                      max_new_tokens: int, seed: int,
                      timeout_s: float) -> tuple[list[Run], list[View], list[str], float, list[float]]:
    """The load split over `clients` processes by generation (each with all its viewers), merged.
    Spawned, not forked: the caller may have threads (a test's fixtures)."""
    parts = min(clients, generations)
    with ProcessPoolExecutor(parts, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(load_part, app.url, app.prefix, accounts, part, parts, viewers, generations,
                               max_new_tokens, seed, timeout_s) for part in range(parts)]
        results = [future.result() for future in futures]
    runs = [run for result in results for run in result[0]]
    views = [view for result in results for view in result[1]]
    problems = [problem for result in results for problem in result[2]]
    lag = sorted(sample for result in results for sample in result[4])
    return runs, views, problems, max(result[3] for result in results), lag


def run_load(app: LiveApp, *, viewers: int, generations: int, max_new_tokens: int, users: int,
             seed: int = 7, timeout_s: float = 1800, clients: int = 2) -> dict:
    """The whole measurement against a running application; the figures as one dict."""
    accounts = create_accounts(app, min(users, generations))
    warm_up(app, accounts[0])
    runs, views, problems, wall_s, lag = load_in_processes(
        app, accounts, clients, viewers, generations, max_new_tokens, seed, timeout_s)
    for run in runs:
        try:
            run.stored = app.wait_generation(run.account.token, run.gen_id, timeout=60)
        except AssertionError as exc:  # still running after the load's time limit
            problems.append(str(exc))
            continue
        if run.stored["status"] != "done":
            problems.append(f"generation {run.gen_id} {run.stored['status']}: {run.stored['failure_reason']}")
    for view in views:
        problems += [f"viewer of {view.run.gen_id}: {problem}" for problem in view.check()]
    watchers = {run.gen_id: 0 for run in runs}
    for view in views:
        watchers[view.run.gen_id] += 1
    generated = sum(run.generated for run in runs)
    expected = sum(run.generated * watchers[run.gen_id] for run in runs)
    delivered = sum(view.delivered() for view in views)
    latencies = sorted(
        (at - view.run.token_times[n]) * 1000
        for view in views for n, at in view.live_tokens() if n in view.run.token_times
    )
    # The same latency split where the stream entry was written (Redis's clock, in ms): the worker's
    # share (event made -> in Redis) and the rest (Redis -> server -> browser).
    in_redis = sorted((view.run.redis_times[n] - view.run.token_times[n]) * 1000
                      for view in views for n, _at in view.live_tokens() if n in view.run.redis_times)
    from_redis = sorted((at - view.run.redis_times[n]) * 1000
                        for view in views for n, at in view.live_tokens() if n in view.run.redis_times)
    return {
        "delivered_over_generated": delivered / expected if expected else 0.0,
        "extra_latency_p50_ms": round(percentile(latencies, 0.50), 1),
        "extra_latency_p99_ms": round(percentile(latencies, 0.99), 1),
        "worker_to_redis_p50_ms": round(percentile(in_redis, 0.50), 1),
        "worker_to_redis_p99_ms": round(percentile(in_redis, 0.99), 1),
        "redis_to_browser_p50_ms": round(percentile(from_redis, 0.50), 1),
        "redis_to_browser_p99_ms": round(percentile(from_redis, 0.99), 1),
        "client_loop_lag_p50_ms": round(percentile(lag, 0.50), 1),
        "client_loop_lag_p99_ms": round(percentile(lag, 0.99), 1),
        "errors": len(problems),
        "viewers": len(views),
        "client_processes": clients,
        "generations": len(runs),
        "users": len(accounts),
        "late_viewers": sum(view.late for view in views),
        "max_new_tokens": max_new_tokens,
        "generated_tokens": generated,
        "delivered_tokens": delivered,
        "expected_tokens": expected,
        "live_tokens": len(latencies),
        "replayed_tokens": delivered - len(latencies),
        "wall_s": round(wall_s, 1),
        # The per-user limits the application ran with (0: off).
        "max_concurrent_per_user": int(app.env.get("ARENA_MAX_CONCURRENT_PER_USER") or 0),
        "rate_limit_per_min": int(app.env.get("ARENA_RATE_LIMIT_PER_MIN") or 0),
        "max_concurrent_generations": int(app.env.get("ARENA_MAX_CONCURRENT_GENERATIONS") or 16),
        "problems": problems[:20],
    }


def percentile(values: list[float], q: float) -> float:
    """Nearest rank; NaN for no values (no token was received live)."""
    return values[max(0, math.ceil(q * len(values)) - 1)] if values else float("nan")


def report(result: dict) -> None:
    for problem in result["problems"]:
        print(f"error: {problem}")
    rows = [
        ("viewers / generations / users", (f"{result['viewers']} / {result['generations']} / {result['users']}"
                                          f" ({result['late_viewers']} viewers joining late)")),
        ("tokens generated (stored)", f"{result['generated_tokens']} (max {result['max_new_tokens']} each)"),
        ("tokens delivered / expected", (f"{result['delivered_tokens']} / {result['expected_tokens']}"
                                        f" ({result['live_tokens']} live, {result['replayed_tokens']} replayed)")),
        ("delivered over generated", f"{result['delivered_over_generated']}"),
        ("extra latency worker -> browser, p50 / p99",
         f"{result['extra_latency_p50_ms']} ms / {result['extra_latency_p99_ms']} ms"),
        ("  of which event made -> written in Redis, p50 / p99",
         f"{result['worker_to_redis_p50_ms']} ms / {result['worker_to_redis_p99_ms']} ms"),
        ("  of which Redis -> server -> browser, p50 / p99 (ms clock)",
         f"{result['redis_to_browser_p50_ms']} ms / {result['redis_to_browser_p99_ms']} ms"),
        ("the clients' own event loop waking late, p50 / p99",
         f"{result['client_loop_lag_p50_ms']} ms / {result['client_loop_lag_p99_ms']} ms"),
        ("errors", f"{result['errors']}"),
        ("per-user limits (0: off)", (f"{result['max_concurrent_per_user']} at once,"
                                     f" {result['rate_limit_per_min']} a minute")),
        ("wall time of the load", f"{result['wall_s']} s"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(json.dumps({k: v for k, v in result.items() if k != "problems"}))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--viewers", type=int, default=200)
    parser.add_argument("--generations", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--users", type=int, default=8, help="generations are spread over this many users")
    parser.add_argument("--seed", type=int, default=7, help="when the late viewers join")
    parser.add_argument("--clients", type=int, default=2, help="client processes the viewers are split over")
    parser.add_argument("--rounds", type=int, default=1, help="loads one after another; the medians at the end")
    parser.add_argument("--quick", action="store_true", help="a small run: 20 viewers, 4 generations, 8 tokens")
    args = parser.parse_args(argv)
    if args.quick:
        args.viewers, args.generations, args.max_new_tokens, args.users = 20, 4, 8, 2
    if min(args.viewers, args.generations, args.max_new_tokens, args.users, args.clients, args.rounds) < 1:
        parser.error("--viewers, --generations, --max-new-tokens, --users, --clients and --rounds must be at least 1")
    return args


def app_env(generations: int, users: int) -> dict[str, str]:
    """The application's settings for this load: every generation admitted and decoded at once, and the
    per-user limits on (their defaults, raised only where one user's share of the load needs it)."""
    per_user = math.ceil(generations / min(users, generations))
    return {
        "ARENA_MAX_CONCURRENT_PER_USER": str(max(4, per_user)),
        "ARENA_RATE_LIMIT_PER_MIN": str(max(30, per_user + 1)),  # + the warm-up generation
        "ARENA_MAX_CONCURRENT_GENERATIONS": str(max(16, generations)),  # the fair line's capacity: all at once
        "ARENA_CELERY_CONCURRENCY": str(generations + 8),  # one Celery thread follows each generation
        "ARENA_WORKER_MAX_BATCH": str(generations),
        "ARENA_WORKER_MAX_QUEUE": str(max(32, generations)),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = []
    data_dir = Path(tempfile.mkdtemp(prefix="bench-load-"))
    with running_app(REDIS_URL, data_dir, **app_env(args.generations, args.users)) as app:
        for round_ in range(args.rounds):
            result = run_load(app, viewers=args.viewers, generations=args.generations,
                              max_new_tokens=args.max_new_tokens, users=args.users, seed=args.seed,
                              clients=args.clients)
            result["load_average_1m"] = round(os.getloadavg()[0], 1)  # how busy the machine was meanwhile
            if args.rounds > 1:
                print(f"--- round {round_ + 1} of {args.rounds}")
            report(result)
            results.append(result)
    if args.rounds > 1:
        summarise(results)
    return 0 if all(r["errors"] == 0 and r["delivered_over_generated"] == 1.0 for r in results) else 1


def summarise(results: list[dict]) -> None:
    """The medians over the rounds (a busy machine's figures vary a lot from one load to the next)."""
    keys = ("extra_latency_p50_ms", "extra_latency_p99_ms", "client_loop_lag_p99_ms", "load_average_1m")
    summary: dict = {f"median_{key}": round(statistics.median(r[key] for r in results), 1) for key in keys}
    summary |= {"rounds": len(results), "errors": sum(r["errors"] for r in results),
                "delivered_over_generated": min(r["delivered_over_generated"] for r in results),
                "p99_each_round": [r["extra_latency_p99_ms"] for r in results]}
    print("medians: " + ", ".join(f"{key} {value}" for key, value in summary.items()))
    print(json.dumps(summary))


if __name__ == "__main__":
    sys.exit(main())
