"""Can a blind match be told apart? A fast and a slow contestant, watched as their judge would.

Starts the whole application (as `make run` does), creates a 4-contestant tournament through
the API, seeded so that match 1 puts the fastest packaged variant (SmolLM2 on llama.cpp)
against the slowest (Gemma 3 270M on transformers, full precision), and follows match 1's
battle socket, logged in as the tournament's owner (a staff user), recording when each
frame arrives and which side's text it carries. Meanwhile it polls, as that owner, every
page a judge could read on the side: /healthz, the status page, GET /api/v1/workers and the
worker admin; with every frame, none may name a contestant (slug or name) before the reveal.

Meanwhile, from the battle's first text on, another user keeps a playground generation
running on a third model (SmolLM2 on transformers, through the API), one after another, so
the contestants' speeds change under the pacing as they do on a shared machine.

Measured in one run:
- paced_gap_ratio: the two sides' median gaps between frames that carry their text, larger
  over smaller (1.0: the same rhythm);
- paced_rate_ratio: the two sides' words delivered per second, larger over smaller;
- tail_gap_over_joint_gap: the longer answer's median gap between its text frames after the
  shorter one's last, over its median gap while both were coming (1.0: its tail does not
  show its own speed);
- raw_speed_ratio: the two models' real decode speeds in that battle (tokens/s as their
  workers measured them, read from the database after the match: never shown to the judge);
- leaks: pages or frames that named a contestant before the reveal.

Prints the figures, then one JSON object as its last line.
Usage: python bench/blind.py [--max-new-tokens 96]
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import websockets.sync.client as ws_client

from harness.app import LiveApp, running_app

REDIS_URL = "redis://127.0.0.1:6379/0"
# Seeds 1 and 4 meet in match 1: the fastest and the slowest packaged variants. Seeds 2 and 3
# (match 2, warmed while match 1 plays) are llama.cpp entries: quick to load beside it.
CONTESTANTS = ["smollm2-135m-llamacpp", "gemma-3-270m-llamacpp", "smollm2-135m-llamacpp-spec", "gemma-3-270m"]
PROMPT = "Write a long story about a lighthouse keeper and a storm."
# The other user's work on the machine: a model outside the tournament, decoding on the same cores.
RIVAL_MODEL, RIVAL_PROMPT = "smollm2-135m", "Explain in detail how a steam engine works."
MIN_TAIL_GAPS = 3
SIDE_PAGES = ("healthz", "status/", "admin/workers/workerprocess/")
APPEND = re.compile(r'<div id="(left|right)-output" hx-swap-oob="beforeend">(.*?)</div>', re.S)


def catalogue_names(app: LiveApp, slugs: list[str]) -> dict[str, str]:
    out = app.manage("shell", "-c", (
        "import json; from arena.catalogue.models import ModelEntry as M; "
        f"print(json.dumps(dict(M.objects.filter(slug__in={slugs!r}).values_list('slug', 'name'))))"))
    return json.loads(out.splitlines()[-1])


def naming(names: dict[str, str]) -> re.Pattern:
    """A contestant's slug or name as a whole (so "gemma-3-270m" is not found inside
    "gemma-3-270m-llamacpp", nor a name inside a longer one: "…(base), llama.cpp …")."""
    words = [*names, *names.values()]
    return re.compile("|".join(rf"(?<![\w-]){re.escape(w)}(?![\w-]|, )" for w in sorted(words, key=len, reverse=True)))


def stored_speeds(app: LiveApp, battle_id: str) -> dict[str, float]:
    out = app.manage("shell", "-c", (
        f"import json; from arena.battles.models import Battle; b = Battle.objects.get(id={battle_id!r}); "
        "print(json.dumps({s: g.tokens_per_s for s, g in b.sides}))"))
    return json.loads(out.splitlines()[-1])


def follow(ws_url: str, headers: dict, frames: list, timeout: float) -> None:
    """Every frame of the battle socket with its arrival time, until the vote opens."""
    deadline = time.time() + timeout
    with ws_client.connect(ws_url, additional_headers=headers) as sock:
        while time.time() < deadline:
            try:
                frame = sock.recv(timeout=max(0.1, deadline - time.time()))
            except TimeoutError:
                break
            frames.append((time.monotonic(), frame))
            if 'id="vote-buttons"' in frame:
                return


class TooFewFrames(AssertionError):
    """A side's answer was too short to measure its pace (a sampled answer may end at once)."""


class NoTail(TooFewFrames):
    """Both answers ended together (both at the token limit, say): no tail to measure."""


def side_stats(frames: list[tuple[float, str]], side: str) -> tuple[float, float, int]:
    """(median gap between frames with this side's text, words a second, frames)."""
    times, text = [], ""
    for t, frame in frames:
        pieces = [html for s, html in APPEND.findall(frame) if s == side]
        if pieces:
            times.append(t)
            text += "".join(pieces)
    if len(times) < 3:
        raise TooFewFrames(f"{side}: only {len(times)} text frames")
    gaps = [b - a for a, b in itertools.pairwise(times)]
    return statistics.median(gaps), len(text.split()) / (times[-1] - times[0]), len(times)


def text_times(frames: list[tuple[float, str]], side: str) -> list[float]:
    return [t for t, frame in frames if any(s == side for s, _html in APPEND.findall(frame))]


def tail_stats(frames: list[tuple[float, str]]) -> dict:
    """The longer answer's median gap between its text frames after the shorter one's last
    text frame ("tail") and before it ("joint")."""
    times = {side: text_times(frames, side) for side in ("left", "right")}
    longer = max(times, key=lambda side: times[side][-1])
    shorter_end = min(ts[-1] for ts in times.values())
    joint = [b - a for a, b in itertools.pairwise(t for t in times[longer] if t <= shorter_end)]
    tail = [b - a for a, b in itertools.pairwise(t for t in times[longer] if t >= shorter_end)]
    if len(joint) < MIN_TAIL_GAPS or len(tail) < MIN_TAIL_GAPS:
        raise NoTail(f"answers too alike in length for a tail: {len(joint)} and {len(tail)} gaps")
    return {"longer": longer, "joint_gap_s": statistics.median(joint), "tail_gap_s": statistics.median(tail),
            "tail_frames": len(tail)}


def compete(app: LiveApp, frames: list, stop: threading.Event, started: list[dict]) -> None:
    """Another user's playground generations, one after another, from the battle's first
    text frame until `stop` (the last one is waited for: nothing is left running)."""
    token = app.token("rival")
    while not stop.is_set() and not any(APPEND.search(frame) for _t, frame in list(frames)):
        time.sleep(0.05)
    while not stop.is_set():
        response = app.api(token, "post", "/api/v1/generations", json={
            "model": RIVAL_MODEL, "prompt": RIVAL_PROMPT, "params": {"temperature": 0.7, "max_new_tokens": 128}})
        if response.status_code != 202:
            started.append({"status": f"refused: {response.status_code} {response.text[:200]}"})
            return
        body = app.wait_generation(token, response.json()["id"], timeout=300)
        started.append({"status": body["status"], "tokens": body["metrics"]["generated_tokens"],
                        "tokens_per_s": body["metrics"]["tokens_per_s"]})


def ratio(a: float, b: float) -> float:
    return round(max(a, b) / min(a, b), 3) if min(a, b) > 0 else float("inf")


def measure(app: LiveApp, max_new_tokens: int = 96, timeout: float = 600, attempts: int = 3) -> dict:
    """`measure_once`, again with a new match when a side's sampled answer was too short to
    measure (each match draws its own seeds: the base Gemma sometimes stops at once), or when the
    two answers ended together (no tail). When no match of `attempts` had a tail, the last one's
    figures come back with `tail_gap_over_joint_gap` None (the tail rule itself is tested on a
    fake clock: tests/arena/battles/test_pacing_tail.py)."""
    without_tail = None
    for attempt in range(1, attempts + 1):
        try:
            result = measure_once(app, max_new_tokens, timeout)
        except TooFewFrames:
            if attempt == attempts:
                if without_tail is not None:
                    return without_tail
                raise
            continue
        if result["tail_gap_over_joint_gap"] is not None:
            return result
        without_tail = result
    assert without_tail is not None
    return without_tail


def measure_once(app: LiveApp, max_new_tokens: int = 96, timeout: float = 600) -> dict:
    token, session = app.token("admin"), app.login()
    names = catalogue_names(app, CONTESTANTS)
    secret = naming(names)
    created = app.api(token, "post", "/api/v1/tournaments", json={
        "contestants": CONTESTANTS, "prompt": PROMPT, "seeding": "given",
        "params": {"temperature": 0.7, "max_new_tokens": max_new_tokens}})
    assert created.status_code == 201, created.text
    tournament = created.json()
    battle_id = tournament["matches"][0]["battle"]["id"]
    frames: list[tuple[float, str]] = []
    ws_url = app.url.replace("http", "ws", 1) + f"ws/battles/{battle_id}/"
    follower = threading.Thread(target=follow, args=(ws_url, app.ws_headers(session), frames, timeout))
    rivals: list[dict] = []
    stop_rival = threading.Event()
    rival = threading.Thread(target=compete, args=(app, frames, stop_rival, rivals))
    follower.start()
    rival.start()
    leaks, polls = [], 0
    while follower.is_alive():  # the judge's side channels, while the match plays
        pages = {path: session.get(app.url + path, timeout=30).text for path in SIDE_PAGES}
        pages["api/v1/workers"] = app.api(token, "get", "/api/v1/workers").text
        pages["api/v1/tournaments"] = app.api(token, "get", f"/api/v1/tournaments/{tournament['id']}").text
        leaks += [f"{path}: {m.group(0)!r}" for path, body in pages.items() if (m := secret.search(body))]
        polls += 1
        time.sleep(0.5)
    follower.join()
    stop_rival.set()
    rival.join()
    leaks += [f"frame: {m.group(0)!r}" for _t, f in frames if (m := secret.search(f))]
    stop = session.post(app.url + f"tournaments/{tournament['id']}/stop",
                        headers={"X-CSRFToken": session.cookies.get("csrftoken", ""), "Referer": app.url})
    assert stop.status_code in (200, 302), stop.status_code
    gaps, rates, counts = {}, {}, {}
    for side in ("left", "right"):
        gaps[side], rates[side], counts[side] = side_stats(frames, side)
    try:
        tail: dict = tail_stats(frames)
    except NoTail as exc:
        tail = {"missing": str(exc)}
    speeds = stored_speeds(app, battle_id)
    return {
        "paced_gap_ratio": ratio(gaps["left"], gaps["right"]),
        "paced_rate_ratio": ratio(rates["left"], rates["right"]),
        "tail_gap_over_joint_gap": round(tail["tail_gap_s"] / tail["joint_gap_s"], 3) if "tail_gap_s" in tail else None,
        "raw_speed_ratio": ratio(speeds["left"] or 0.0, speeds["right"] or 0.0),
        "leaks": len(leaks),
        "detail": {"median_gap_s": gaps, "words_per_s": rates, "text_frames": counts, "decode_tokens_per_s": speeds,
                   "tail": tail, "rival_generations": rivals, "side_channel_polls": polls, "leaked": leaks[:10]},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-new-tokens", type=int, default=96)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="arena-bench-blind-") as tmp, running_app(REDIS_URL, Path(tmp)) as app:
        result = measure(app, args.max_new_tokens)
    detail = result.pop("detail")
    print(f"median gap between text frames (s): {detail['median_gap_s']}")
    print(f"words delivered per second:         {detail['words_per_s']}")
    print(f"real decode speeds (tokens/s):      {detail['decode_tokens_per_s']}")
    print(f"longer answer's median gap, together and alone (s): {detail['tail']}")
    print(f"the other user's generations meanwhile: {detail['rival_generations']}")
    print(f"side-channel polls: {detail['side_channel_polls']}, leaks: {detail['leaked'] or 'none'}")
    print(json.dumps(result))
    return 0 if result["leaks"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
