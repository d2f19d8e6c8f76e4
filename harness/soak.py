"""Soak: a bounded mixed load on the whole application for N minutes while faults are injected.

Starts the application as `make run` does (arena.launcher: uvicorn, a Celery worker, the
orchestrator, real model workers) on a private redis-server of its own (harness/private_redis.py:
restarting it harms nobody), creates `--users` users, then for `--minutes` minutes keeps
`--clients` client threads busy, each one request at a time for a user drawn at random:

- playground: the playground form posted with the user's session (a web generation, which a
  page that leaves cancels), then a WebSocket (`?format=json`) reads the answer;
- OpenAI-compatible: POST /v1/chat/completions with stream=true, the SSE deltas read;
- comparison: POST /api/v1/comparisons, then the battle's WebSocket reads both sides (HTML
  fragments as htmx gets them);
- and one more thread plays tournaments (4 llama.cpp contestants, blind, paced), each match
  watched over its battle's WebSocket, the winner picked through the API (a match with a
  failed side is run again).

Short answers (`--max-tokens`) and few clients keep the load bounded on 2 cores. A socket
the server closes before the end is reconnected, as htmx's ws extension does: the replay
starts from the beginning, so the client's text restarts with it.

Faults, spread evenly over the run (a fault every run/(k+1) seconds, cycling through the four
kinds, k = max(4, minutes): one a minute), each on the running processes:
- worker_kill: a model worker SIGKILLed (one serving a request if any; pids from the
  orchestrator's worker records in Redis);
- browser_vanish: the next playground client closes its socket after its third token;
- redis_restart: the private Redis killed, down 2 s, started again empty (it keeps nothing on disk);
- celery_kill: the Celery worker SIGKILLed (the launcher starts it again).

After the load stops, every accepted request is waited for (up to `--drain-s`), and its stored
state read back through the JSON API (a tournament's sides from the tournament's state as soon
as both have ended). Counted, per generation (a battle's side is one):
- generations: requests the server accepted (202/201, or a 200 event stream);
- lost: an accepted generation that never reached a final state (done, failed, cancelled) in
  the database, or whose final state disagrees with the one its client was told over its
  stream (told "done", stored "failed"...); a client that vanished on purpose was told nothing;
- failed_by_faults: stored FAILED while a fault was injected between its request and its end
  (plus FAULT_SLACK_S): not lost, the user was told why;
- failed_other: stored FAILED with no fault near it (listed with their reasons; not lost, but a
  goal: it must be 0);
- cancelled_by_vanish: cancelled because its browser vanished (its stored text must start with
  what that browser got);
- stored_equals_streamed: for every generation stored DONE whose client heard "done", the text
  the client assembled from the stream equals the stored text (and, for the playground, the
  done event's own text too);
- waited_in_line: generations whose client was told a place in the fair line (a playground
  socket's QUEUED event, a comparison side's "in line" status): with `--capacity` small, the
  line is soaked through the faults too;
- errors_5xx: HTTP responses (and WebSocket handshakes) with a 5xx status the clients got;
- rss_growth_pct: the summed RSS of the launcher's long-running children (uvicorn, Celery,
  orchestrator; model workers are left out: they load and unload on demand), sampled every
  SAMPLE_EVERY_S: 100 × (mean over the last quarter of the run − mean over the middle tenth,
  45-55 % of the run) / that middle mean. A Celery worker killed late restarts smaller, which
  can only lower it;
- redis_mb_growth: Redis INFO used_memory, the same two means, their difference in MB; plus
  redis_unexpiring_keys: keys under the app's prefix with no TTL that hold a generation's stream.

Goals (exit status 1 when one is missed): lost 0, failed_other 0, 5xx 0, stored_equals_streamed;
and unless --no-memory-goals: rss_growth_pct <= 10, redis_mb_growth <= REDIS_GROWTH_MB,
redis_unexpiring_keys 0. The last stdout line is the JSON.
Usage: python bench/soak.py [--minutes 20] [--users 8] [--clients 3] [--max-tokens 32] [--capacity N]
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import os
import random
import re
import signal
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import requests
import websockets.sync.client as ws_client
from websockets.exceptions import InvalidStatus

from harness.app import LiveApp, running_app
from harness.app import launcher_child as app_launcher_child
from harness.private_redis import PrivateRedis
from inference.worker import redis_client

PLAYGROUND_MODELS = ["smollm2-135m-llamacpp", "smollm2-135m"]  # both engines
COMPARISON = ("smollm2-135m-llamacpp", "gemma-3-270m-llamacpp")
TOURNAMENT = ["smollm2-135m-llamacpp", "gemma-3-270m-llamacpp", "smollm2-135m-llamacpp-spec",
              "gemma-3-270m-llamacpp-spec"]
PROMPTS = ["Write a short poem about the sea.", "Explain what a CPU cache is.", "List uses of a paperclip.",
           "Tell me a story about a lighthouse.", "Why is the sky blue?", "Describe a cat in three sentences."]
FAULT_KINDS = ["worker_kill", "browser_vanish", "redis_restart", "celery_kill"]
# The answer whose browser vanishes after its third token: long, so that it is still going
# when the disconnect grace (1 s here) has passed, not one that stops by itself first.
VANISH_TOKENS = 400
VANISH_PROMPT = "Write a long story about a dragon who learns to bake."
FINAL = ("done", "failed", "cancelled")
FAULT_SLACK_S = 20  # a fault's effects (sweeper, relaunch) reach a generation within this
SAMPLE_EVERY_S = 5
REDIS_GROWTH_MB = 5.0
RSS_GROWTH_PCT = 10.0


@dataclass
class Record:
    """One generation as a client saw it and as the database stored it."""
    kind: str  # playground | openai | comparison | tournament
    key: str  # the generation id, or "<battle id>:<side>"
    user: str
    started: float
    received: str = ""  # the text the client assembled from the stream
    done_text: str | None = None  # the playground's done event's own text
    told: str | None = None  # the final state the stream told the client
    vanished: bool = False  # the client closed mid-stream on purpose
    ended: float | None = None
    stored: dict | None = None  # {"status", "text", "failure_reason"}
    paced: dict | None = None  # a tournament side as its API showed it once ended (paced, blind)
    waited: bool = False  # its client was told a place in the fair line (a QUEUED event or status)


@dataclass
class User:
    name: str
    token: str
    session: requests.Session


@dataclass
class Soak:
    app: LiveApp
    redis_server: PrivateRedis
    users: list[User]
    max_tokens: int
    records: list[Record] = field(default_factory=list)
    faults: list[tuple[float, str]] = field(default_factory=list)
    errors_5xx: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    samples: list[tuple[float, float, float | None]] = field(default_factory=list)  # (t, rss MB, redis MB)
    tournaments: list[tuple[str, str]] = field(default_factory=list)  # (id, token)
    vanish_next: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, record: Record) -> Record:
        with self.lock:
            self.records.append(record)
        return record

    def note(self, problem: str) -> None:
        with self.lock:
            self.problems.append(problem)

    def http(self, user: User, method: str, path: str, **kwargs) -> requests.Response:
        """An API call as `user`; a 5xx is counted, never retried."""
        return self.counted(method, path, self.app.api(user.token, method, path, **kwargs))

    def page(self, user: User, method: str, path: str, **kwargs) -> requests.Response:
        """A page as `user`'s browser asks for it (session cookie)."""
        kwargs.setdefault("timeout", 30)
        return self.counted(method, path, user.session.request(method, self.app.url + path, **kwargs))

    def counted(self, method: str, path: str, response: requests.Response) -> requests.Response:
        if response.status_code >= 500:
            with self.lock:
                self.errors_5xx.append(f"{method.upper()} {path}: {response.status_code} {response.text[:200]}")
        return response


# --- clients ---------------------------------------------------------------------------------
def params(soak: Soak, seeded: bool = True) -> dict:
    """Sampled, short answers; a tournament refuses a seed (each match draws its own)."""
    chosen = {"temperature": 0.8, "max_new_tokens": soak.max_tokens}
    return {**chosen, "seed": random.randrange(1000)} if seeded else chosen


def ws_connect(soak: Soak, user: User, path: str):
    """A socket with the user's session cookie; None (and counted) when the handshake gets a 5xx."""
    url = soak.app.url.replace("http", "ws", 1) + path
    headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in user.session.cookies.items()),
               "Origin": soak.app.url.rstrip("/")}
    try:
        return ws_client.connect(url, additional_headers=headers, open_timeout=30)
    except InvalidStatus as exc:
        if exc.response.status_code >= 500:
            with soak.lock:
                soak.errors_5xx.append(f"WS {path}: {exc.response.status_code}")
        soak.note(f"WS {path} refused: {exc.response.status_code}")
        return None


def play_generation(soak: Soak, user: User) -> None:
    vanish = soak.vanish_next.is_set()
    if vanish:
        soak.vanish_next.clear()
    chosen = {**params(soak), "max_new_tokens": VANISH_TOKENS} if vanish else params(soak)
    prompt = VANISH_PROMPT if vanish else random.choice(PROMPTS)
    gen_id = start_from_page(soak, user, random.choice(PLAYGROUND_MODELS), prompt, chosen)
    if gen_id:
        watch_generation(soak, user, soak.add(Record("playground", gen_id, user.name, time.time())), vanish)


def start_from_page(soak: Soak, user: User, model: str, prompt: str, chosen: dict) -> str | None:
    """The playground form sent as a browser sends it (a web generation: one its page's
    leaving cancels); the new generation's id."""
    page = soak.page(user, "get", "playground/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    if page.status_code != 200 or not csrf:
        return soak.note(f"playground page: {page.status_code}")
    response = soak.page(user, "post", "playground/", allow_redirects=False,
                         data={"model": model, "prompt": prompt, "csrfmiddlewaretoken": csrf.group(1), **chosen},
                         headers={"Referer": soak.app.url + "playground/"})
    if response.status_code != 302:
        return soak.note(f"playground form refused: {response.status_code} {response.text[:200]}")
    return response.headers["Location"].strip("/").split("/")[-1]  # /g/<id>/


def watch_generation(soak: Soak, user: User, record: Record, vanish: bool, deadline_s: float = 300) -> None:
    """Read JSON events until a final one; reconnect (replay from the start) if the server closes."""
    deadline = time.time() + deadline_s
    while time.time() < deadline and record.told is None:
        sock = ws_connect(soak, user, f"ws/generations/{record.key}/?format=json")
        if sock is None:
            time.sleep(1)
            continue
        with sock:
            record.received, tokens = "", 0
            try:
                for raw in sock:
                    event = json.loads(raw)
                    if event["type"] == "queued":
                        record.waited = True
                    elif event["type"] == "token":
                        record.received += event.get("text", "")
                        tokens += 1
                        if vanish and tokens >= 3:
                            record.vanished = True
                            soak.faults.append((time.time(), "browser_vanish"))
                            return  # closes the socket mid-stream, as a closed tab does
                    elif event["type"] in FINAL:
                        record.told, record.ended = event["type"], time.time()
                        record.done_text = event.get("text") if event["type"] == "done" else None
                        return
                    elif event["type"] == "error":
                        soak.note(f"socket error on {record.key}: {event.get('message')}")
            except Exception:
                time.sleep(0.5)


def play_openai(soak: Soak, user: User) -> None:
    body = {"model": random.choice(PLAYGROUND_MODELS), "stream": True, "max_tokens": soak.max_tokens,
            "temperature": 0.8, "messages": [{"role": "user", "content": random.choice(PROMPTS)}]}
    response = soak.http(user, "post", "/v1/chat/completions", json=body, stream=True, timeout=300)
    if response.status_code != 200:
        return soak.note(f"completion refused: {response.status_code} {response.text[:200]}")
    record: Record | None = None
    try:
        for line in response.iter_lines(decode_unicode=True):
            if not line or not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                break
            chunk = json.loads(line.removeprefix("data: "))
            if "error" in chunk:
                soak.note(f"stream error: {chunk['error']}")
                break
            if record is None:
                gen_id = chunk["id"].removeprefix("chatcmpl-")
                record = soak.add(Record("openai", str(uuid.UUID(gen_id)), user.name, time.time()))
            for choice in chunk.get("choices") or []:
                record.received += choice["delta"].get("content") or ""
                if choice.get("finish_reason"):
                    record.told, record.ended = "done", time.time()
    except requests.RequestException as exc:
        soak.note(f"completion stream broke: {exc}")
    finally:
        response.close()
    if record is not None and record.told is None:
        record.told = "failed"  # an SSE stream ends without a finish_reason only on a failure


def play_comparison(soak: Soak, user: User) -> None:
    left, right = COMPARISON
    body = {"left_model": left, "right_model": right, "prompt": random.choice(PROMPTS), "params": params(soak)}
    response = soak.http(user, "post", "/api/v1/comparisons", json=body)
    if response.status_code != 202:
        return soak.note(f"comparison refused: {response.status_code} {response.text[:200]}")
    battle_id = response.json()["id"]
    sides = {s: soak.add(Record("comparison", f"{battle_id}:{s}", user.name, time.time())) for s in ("left", "right")}
    watch_battle(soak, user, battle_id, sides)


OUTPUT = re.compile(r'<div id="(left|right)-output"( class="output"| hx-swap-oob="beforeend")>(.*?)</div>', re.S)
STATUS = re.compile(r'<div id="(left|right)-status" class="status[^"]*" data-state="(\w+)"')


def watch_battle(soak: Soak, user: User, battle_id: str, sides: dict[str, Record], deadline_s: float = 400) -> None:
    """Read the battle's HTML frames as htmx would: plain output replaces and appends build each
    side's text (the Markdown rendering of a finished answer is left out), statuses its state."""
    deadline = time.time() + deadline_s
    while time.time() < deadline and not all(r.told for r in sides.values()):
        sock = ws_connect(soak, user, f"ws/battles/{battle_id}/")
        if sock is None:
            time.sleep(1)
            continue
        with sock:
            try:
                for frame in sock:
                    feed_battle_frame(frame, sides)
                    if all(r.told for r in sides.values()):
                        return
            except Exception:
                time.sleep(0.5)


def feed_battle_frame(frame: str, sides: dict[str, Record]) -> None:
    for match in OUTPUT.finditer(frame):
        side, how, text = match.groups()
        record = sides[side]
        record.received = (record.received if "beforeend" in how else "") + html.unescape(text)
    for side, state in STATUS.findall(frame):
        sides[side].waited = sides[side].waited or (state == "queued" and "in line of" in frame)
        if state in FINAL and not sides[side].told:
            sides[side].told, sides[side].ended = state, time.time()


def play_tournaments(soak: Soak, user: User) -> None:
    """Tournaments one after another until the load stops; each match watched, then decided."""
    while not soak.stop.is_set():
        response = soak.http(user, "post", "/api/v1/tournaments", json={
            "contestants": TOURNAMENT, "prompt": random.choice(PROMPTS), "params": params(soak, seeded=False),
            "seeding": "given"})
        if response.status_code != 201:
            soak.note(f"tournament refused: {response.status_code} {response.text[:200]}")
            time.sleep(5)
            continue
        soak.tournaments.append((response.json()["id"], user.token))
        play_one_tournament(soak, user, response.json())


def play_one_tournament(soak: Soak, user: User, state: dict) -> None:
    tid = state["id"]
    while state["state"] == "running" and state["current_match"] and not soak.stop.is_set():
        match = next(m for m in state["matches"] if m["id"] == state["current_match"])
        battle_id = match["battle"]["id"]
        sides = {s: soak.add(Record("tournament", f"{battle_id}:{s}", user.name, time.time()))
                 for s in ("left", "right")}
        watch_battle(soak, user, battle_id, sides)
        state = wait_tournament_sides(soak, user, tid, battle_id, sides)
        if state is None:
            return
        time.sleep(random.uniform(1, 4))  # the user reads both answers
        if all(r.paced["status"] == "done" for r in sides.values()):
            action = ("winner", {"match": match["id"], "winner": random.choice(["left", "right"])})
        else:
            action = ("rerun", {"match": match["id"]})
        response = soak.http(user, "post", f"/api/v1/tournaments/{tid}/{action[0]}", json=action[1])
        if response.status_code != 200:
            soak.note(f"tournament {action[0]} refused: {response.status_code} {response.text[:200]}")
            return
        state = response.json()


def wait_tournament_sides(soak: Soak, user: User, tid: str, battle_id: str, sides: dict[str, Record],
                          timeout: float = 120) -> dict | None:
    """The tournament's state once the battle's sides have ended; their stored state recorded."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        response = soak.http(user, "get", f"/api/v1/tournaments/{tid}")
        if response.status_code == 200:
            state = response.json()
            battle = next((m["battle"] for m in state["matches"] if (m["battle"] or {}).get("id") == battle_id), None)
            if battle and all(battle[s]["status"] in FINAL for s in sides):
                for s, record in sides.items():
                    record.paced = {"status": battle[s]["status"], "text": battle[s]["text"]}
                return state
        time.sleep(1)
    return None


ACTIONS = [play_generation, play_openai, play_comparison, play_generation, play_openai]


def client_loop(soak: Soak, index: int) -> None:
    rng = random.Random(index)
    step = index
    while not soak.stop.is_set():
        action = ACTIONS[step % len(ACTIONS)]
        step += 1
        try:
            action(soak, rng.choice(soak.users))
        except Exception as exc:
            soak.note(f"{action.__name__} crashed: {exc!r}")
        time.sleep(rng.uniform(0.2, 1.5))


# --- faults ----------------------------------------------------------------------------------
def launcher_child(app: LiveApp, part: str) -> psutil.Process | None:
    """The launcher's child named by `part`, or None while there is none (it is being started again)."""
    try:
        return app_launcher_child(app, part)
    except (ValueError, psutil.Error):  # not exactly one: gone a moment ago, or not back yet
        return None


def kill_a_worker(soak: Soak) -> bool:
    app = soak.app
    pids = app.worker_pids()
    busy = [pid for wid, pid in pids.items() if int(app.redis.hget(f"{app.prefix}:worker:{wid}", "in_flight") or 0)]
    candidates = busy or list(pids.values())
    if not candidates:
        return False
    try:
        os.kill(random.choice(candidates), signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def kill_celery(soak: Soak) -> bool:
    celery = launcher_child(soak.app, "celery")
    if celery is None:
        return False
    celery.kill()
    return True


def inject(soak: Soak, kind: str) -> bool:
    """One fault; False when there was nothing to hit yet (tried again shortly)."""
    if kind == "worker_kill":
        return kill_a_worker(soak)
    if kind == "celery_kill":
        return kill_celery(soak)
    if kind == "redis_restart":
        soak.redis_server.restart(down_s=2.0)
        return True
    soak.vanish_next.set()  # browser_vanish: recorded by the client when it closes
    return True


def fault_loop(soak: Soak, run_s: float, count: int) -> None:
    started = time.time()
    for i in range(count):
        at = started + run_s * (i + 1) / (count + 1)
        while time.time() < at:
            if soak.stop.wait(min(1.0, max(0.0, at - time.time()))):
                return
        kind = FAULT_KINDS[i % len(FAULT_KINDS)]
        for _try in range(30):
            try:
                if inject(soak, kind):
                    if kind != "browser_vanish":
                        soak.faults.append((time.time(), kind))
                    log(started, f"fault: {kind}")
                    break
            except Exception as exc:
                soak.note(f"fault {kind} failed: {exc!r}")
            if soak.stop.wait(1.0):
                return


# --- memory ----------------------------------------------------------------------------------
def sample_loop(soak: Soak, started: float) -> None:
    while not soak.stop.wait(SAMPLE_EVERY_S):
        rss = 0.0
        for part in ("arena.asgi", "celery", "orchestrator"):
            proc = launcher_child(soak.app, part)
            with contextlib.suppress(psutil.Error):
                rss += proc.memory_info().rss / 2**20 if proc else 0.0
        try:
            redis_mb = soak.app.redis.info("memory")["used_memory"] / 2**20
        except Exception:
            redis_mb = None
        soak.samples.append((time.time() - started, rss, redis_mb))


def growth(samples: list[tuple[float, float]], run_s: float) -> tuple[float, float] | None:
    """(mean over 45-55 % of the run, mean over its last quarter); None without samples in both."""
    middle = [v for t, v in samples if 0.45 * run_s <= t <= 0.55 * run_s and v is not None]
    last = [v for t, v in samples if t >= 0.75 * run_s and v is not None]
    if not middle or not last:
        return None
    return sum(middle) / len(middle), sum(last) / len(last)


def unexpiring_stream_keys(soak: Soak) -> int:
    count = 0
    for key in soak.app.redis.scan_iter(match=f"{soak.app.prefix}:gen:*", count=1000):
        if soak.app.redis.type(key) == b"stream" and soak.app.redis.ttl(key) == -1:
            count += 1
    return count


# --- the outcome -----------------------------------------------------------------------------
def read_stored(soak: Soak, record: Record, tokens: dict[str, str]) -> dict | None:
    token = tokens[record.user]
    if record.kind in ("playground", "openai"):
        response = soak.app.api(token, "get", f"/api/v1/generations/{record.key}")
        return response.json() if response.status_code == 200 else None
    if record.kind == "comparison":
        battle_id, side = record.key.split(":")
        response = soak.app.api(token, "get", f"/api/v1/comparisons/{battle_id}")
        return response.json()[side] if response.status_code == 200 else None
    return None  # a tournament side: from the database (stored_battle_sides)


def stored_battle_sides(app: LiveApp, battle_ids: set[str]) -> dict[str, dict]:
    """Tournament sides as the database has them ("<battle id>:<side>" → status, text, reason):
    while a tournament is blind its API shows each side as paced from the Redis stream, not
    the stored answer."""
    if not battle_ids:
        return {}
    out = app.manage("shell", "-c", (
        "import json; from arena.battles.models import Battle\n"
        f"print(json.dumps({{f'{{b.id}}:{{s}}': {{'status': g.status, 'text': g.text, 'failure_reason': "
        f"g.failure_reason}} for b in Battle.objects.filter(id__in={sorted(battle_ids)!r}) for s, g in b.sides}}))"))
    return json.loads(out.splitlines()[-1])


def drain(soak: Soak, timeout: float) -> None:
    """Wait until every record is stored in a final state, or the time is up."""
    tokens = {u.name: u.token for u in soak.users}
    deadline = time.time() + timeout
    pending = list(soak.records)
    while pending and time.time() < deadline:
        battles = stored_battle_sides(soak.app, {r.key.split(":")[0] for r in pending if r.kind == "tournament"})
        for record in pending:
            with contextlib.suppress(requests.RequestException, ValueError):
                record.stored = read_stored(soak, record, tokens) or battles.get(record.key)
        pending = [r for r in pending if not (r.stored and r.stored["status"] in FINAL)]
        if pending:
            time.sleep(2)


def near_fault(soak: Soak, record: Record) -> bool:
    end = (record.ended or time.time()) + FAULT_SLACK_S
    return any(record.started - 1 <= at <= end for at, _kind in soak.faults)


def same_text(record: Record, stored_text: str | None) -> bool:
    return record.received == stored_text and record.done_text in (None, stored_text)


def judge(soak: Soak, run_s: float, unexpiring: int) -> dict:
    lost, mismatched, failed_faults, failed_other, vanished_cancelled = [], [], 0, [], 0
    for r in soak.records:
        stored = r.stored or {}
        status = stored.get("status")
        if status not in FINAL or (r.told and not r.vanished and r.told != status):
            lost.append(f"{r.kind} {r.key}: told {r.told}, stored {status}")
            continue
        if status == "failed":
            if near_fault(soak, r):
                failed_faults += 1
            else:
                failed_other.append(f"{r.kind} {r.key}: {stored.get('failure_reason')}")
        if r.vanished:
            vanished_cancelled += status == "cancelled"
            if not stored.get("text", "").startswith(r.received):
                mismatched.append(f"{r.kind} {r.key}: vanished browser got text the store lacks")
        elif status == "done" and r.told == "done" and not same_text(r, stored.get("text")):
            mismatched.append(f"{r.kind} {r.key}: streamed {r.received[:300]!r} stored {stored.get('text', '')[:300]!r}"
                              + (f" paced API {r.paced['text'][:300]!r}" if r.paced else ""))
    paced_differs = [f"{r.key}: API {r.paced['text'][:200]!r} stored {r.stored['text'][:200]!r}"
                     for r in soak.records if r.paced and r.stored and r.paced["status"] == r.stored["status"] == "done"
                     and r.paced["text"] != r.stored["text"]]
    rss = growth([(t, v) for t, v, _ in soak.samples], run_s)
    red = growth([(t, v) for t, _, v in soak.samples], run_s)
    kinds = {}
    for _at, kind in soak.faults:
        kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "generations": len(soak.records),
        "by_kind": {k: sum(r.kind == k for r in soak.records) for k in ("playground", "openai", "comparison",
                                                                          "tournament")},
        "done": sum((r.stored or {}).get("status") == "done" for r in soak.records),
        "waited_in_line": sum(r.waited for r in soak.records),  # told a place in the line (playground, comparison)
        "lost": len(lost), "failed_by_faults": failed_faults, "failed_other": len(failed_other),
        "cancelled_by_vanish": vanished_cancelled,
        "stored_equals_streamed": not mismatched, "mismatches": len(mismatched),
        "errors_5xx": len(soak.errors_5xx),
        "tournament_api_text_differs": len(paced_differs),
        "rss_growth_pct": round(100 * (rss[1] - rss[0]) / rss[0], 2) if rss else None,
        "rss_mb_middle_last": [round(rss[0], 1), round(rss[1], 1)] if rss else None,
        "redis_mb_growth": round(red[1] - red[0], 3) if red else None,
        "redis_unexpiring_keys": unexpiring,
        "faults_injected": len(soak.faults), "faults": kinds,
        "client_problems": len(soak.problems),
        "details": {"lost": lost[:20], "mismatches": mismatched[:20], "failed_other": failed_other[:20],
                    "tournament_api_text_differs": paced_differs[:20],
                    "vanished": [f"{r.key}: {(r.stored or {}).get('status')} after {len(r.received)} characters"
                                 for r in soak.records if r.vanished],
                    "errors_5xx": soak.errors_5xx[:20], "problems": soak.problems[:20]},
    }


def goals_missed(result: dict, memory: bool = True) -> list[str]:
    missed = [name for name, ok in (
        ("lost", result["lost"] == 0), ("failed_other", result["failed_other"] == 0),
        ("errors_5xx", result["errors_5xx"] == 0), ("stored_equals_streamed", result["stored_equals_streamed"]),
    ) if not ok]
    if memory:
        rss, red = result["rss_growth_pct"], result["redis_mb_growth"]
        if rss is None or rss > RSS_GROWTH_PCT:
            missed.append("rss_growth_pct")
        if red is None or red > REDIS_GROWTH_MB:
            missed.append("redis_mb_growth")
        if result["redis_unexpiring_keys"]:
            missed.append("redis_unexpiring_keys")
    return missed


# --- running it ------------------------------------------------------------------------------
def make_users(app: LiveApp, count: int) -> list[User]:
    """`count` users with a password (for the sockets' session) and an API token each."""
    password = "soak-" + os.urandom(8).hex()
    names = [f"soak-user-{i}" for i in range(count)]
    out = app.manage("shell", "-c", (
        "from django.contrib.auth import get_user_model; from arena.accounts.models import ApiToken\n"
        "U = get_user_model()\n"
        f"for name in {names!r}:\n"
        "    user, _ = U.objects.get_or_create(username=name)\n"
        f"    user.set_password({password!r}); user.save()\n"
        "    print(name, ApiToken.issue(user))"))
    tokens = dict(line.split() for line in out.splitlines() if line.startswith("soak-user-"))
    return [User(name, tokens[name], app.login(name, password)) for name in names]


def warm_up(app: LiveApp, user: User) -> None:
    """Load the models once before the clock starts (a cold start is not what is soaked)."""
    for model in {*PLAYGROUND_MODELS, *COMPARISON}:
        created = app.api(user.token, "post", "/api/v1/generations",
                          json={"model": model, "prompt": "Say hi.", "params": {"max_new_tokens": 4}})
        app.wait_generation(user.token, created.json()["id"], timeout=300)


def run_soak(app: LiveApp, redis_server: PrivateRedis, minutes: float, users: int = 8, clients: int = 3,
             max_tokens: int = 32, drain_s: float = 240, faults: int | None = None) -> dict:
    soak = Soak(app, redis_server, make_users(app, users), max_tokens)
    warm_up(app, soak.users[0])
    run_s = minutes * 60
    count = faults if faults is not None else max(len(FAULT_KINDS), int(minutes))
    started = time.time()
    threads = [threading.Thread(target=client_loop, args=(soak, i), daemon=True) for i in range(clients)]
    threads += [threading.Thread(target=play_tournaments, args=(soak, soak.users[-1]), daemon=True),
                threading.Thread(target=fault_loop, args=(soak, run_s, count), daemon=True),
                threading.Thread(target=sample_loop, args=(soak, started), daemon=True)]
    for thread in threads:
        thread.start()
    soak.stop.wait(run_s)
    soak.stop.set()
    log(started, "load stopped; waiting for the clients' last requests")
    for thread in threads:
        thread.join(timeout=max(5.0, drain_s - (time.time() - started - run_s)))
    log(started, f"clients done; reading {len(soak.records)} generations back")
    drain(soak, max(10.0, drain_s - (time.time() - started - run_s)))
    log(started, "drained")
    return judge(soak, run_s, unexpiring_stream_keys(soak))


def log(started: float, message: str) -> None:
    print(f"[{time.time() - started:6.0f} s] {message}", file=sys.stderr, flush=True)


def report(result: dict, memory: bool = True) -> list[str]:
    for name, items in result["details"].items():
        for item in items:
            print(f"{name}: {item}")
    missed = goals_missed(result, memory)
    print(f"goals missed: {', '.join(missed)}" if missed else "all goals met")
    print(json.dumps({k: v for k, v in result.items() if k != "details"}), flush=True)
    return missed


@contextmanager
def soak_app(redis_server: PrivateRedis, data_dir: Path, capacity: int | None = None):
    """The application on the private Redis; a short watch TTL so that the sweeper ends what a
    killed Celery worker followed within seconds (as tests/live/test_reliability.py runs it);
    `capacity`: generations it runs at once (the fair line holds the rest; None: its default)."""
    env = {} if capacity is None else {"ARENA_MAX_CONCURRENT_GENERATIONS": str(capacity)}
    with running_app(redis_server.url, data_dir, ARENA_WATCH_TTL_S="3", **env) as app:
        app.redis = redis_client(redis_server.url, decode_responses=False)  # rides the restarts out
        yield app


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--clients", type=int, default=3, help="client threads besides the tournament one")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--drain-s", type=float, default=240)
    parser.add_argument("--no-memory-goals", action="store_true", help="report RSS/Redis growth, do not judge it")
    parser.add_argument("--capacity", type=int, help="the app's ARENA_MAX_CONCURRENT_GENERATIONS: small, so that "
                                                     "requests wait in the fair line through the faults")
    args = parser.parse_args()
    redis_server = PrivateRedis()
    redis_server.start()
    try:
        with (tempfile.TemporaryDirectory(prefix="arena-soak-") as tmp,
              soak_app(redis_server, Path(tmp), args.capacity) as app):
            result = run_soak(app, redis_server, args.minutes, args.users, args.clients, args.max_tokens,
                              args.drain_s)
    finally:
        redis_server.stop()
    return 1 if report(result, memory=not args.no_memory_goals) else 0


if __name__ == "__main__":
    sys.exit(main())
