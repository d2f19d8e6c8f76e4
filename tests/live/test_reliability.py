"""Reliability under faults, injected into the whole running application (as `make run`
starts it) while a generation streams to a WebSocket:

- its Redis restarted (killed, down 2 s, started again empty: this project's Redis keeps
  nothing on disk). The application's Redis here is a private redis-server of this
  module's own, never the shared one;
- its Celery worker SIGKILLed (the launcher starts it again);
- its orchestrator SIGKILLed (the launcher starts it again).

Each time: the generation ends, done or failed with a reason (never left running),
the socket hears it, what was stored before is unchanged, there is exactly one model
worker for the model and none orphaned, and the next generation is served."""

import json
import signal
import threading
import time

import psutil
import pytest
import websockets.sync.client as ws_client

from arena.generations import lifecycle, sweeper
from arena.generations.lifecycle import WORKER_STOPPED
from harness.app import launcher_child, running_app
from harness.private_redis import PrivateRedis
from inference.worker import redis_client

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.timeout(600)]
MODEL = "smollm2-135m"
WATCH_TTL_S = 3  # the sweeper acts within two of these (plus its 2 s period) of a follower's death
LONG = {"temperature": 0.8, "max_new_tokens": 400, "seed": 1}
PROMPT = "Write a long story about a dragon who learns to bake."


@pytest.fixture(scope="module")
def redis_server():
    server = PrivateRedis()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def app(redis_server, tmp_path_factory):
    # No spare workers: these tests count the app's worker processes by their command line and
    # parent, and a spare (started ahead, no model yet) would be one more (tests/orchestration/
    # test_spares.py tests spares with real processes).
    with running_app(redis_server.url, tmp_path_factory.mktemp("reliability-app"),
                     ARENA_WATCH_TTL_S=str(WATCH_TTL_S), PYTHONFAULTHANDLER="1", ARENA_SPARE_WORKERS="") as app:
        app.redis = redis_client(redis_server.url, decode_responses=False)  # rides the restarts out
        yield app


@pytest.fixture(scope="module")
def token(app):
    return app.token("admin")


@pytest.fixture(scope="module")
def stored(app, token):
    """A generation finished before any fault, as the API shows it."""
    created = app.api(token, "post", "/api/v1/generations",
                      json={"model": MODEL, "prompt": "Say hi.", "params": {"max_new_tokens": 8}}).json()
    body = app.wait_generation(token, created["id"])
    assert body["status"] == "done", body
    return body


class Watcher:
    """A browser's socket on one generation (JSON frames), read on a thread."""

    def __init__(self, app, session, gen_id):
        self.frames: list[dict] = []
        self.connection = ws_client.connect(app.ws_url(gen_id, json_frames=True),
                                            additional_headers=app.ws_headers(session))
        self.sock = self.connection.__enter__()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for raw in self.sock:
                self.frames.append(json.loads(raw))
        except Exception:
            pass

    def terminal(self, timeout: float) -> dict:
        deadline = time.time() + timeout
        while time.time() < deadline:
            ends = [f for f in self.frames if f["type"] in ("done", "failed", "cancelled", "error")]
            if ends:
                return ends[0]
            time.sleep(0.1)
        raise AssertionError(f"the socket heard no end within {timeout} s: {[f['type'] for f in self.frames][-5:]}")

    def close(self):
        self.connection.__exit__(None, None, None)


def model_workers(app) -> list[psutil.Process]:
    """This application's live model worker processes, whoever their parent."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if "inference.worker" in cmdline and app.prefix in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def one_worker_of(app, parent: psutil.Process) -> psutil.Process:
    """Exactly one model worker for the app, the current orchestrator's own child (no orphan)."""
    (worker,) = model_workers(app)
    assert worker.ppid() == parent.pid
    return worker


def start_watched(app, session, **params):
    gen_id = app.start_from_page(session, PROMPT, **{**LONG, **params})
    watcher = Watcher(app, session, gen_id)
    app.wait_tokens(gen_id, at_least=3, timeout=240)
    return gen_id, watcher


def serves_the_next_generation(app, token):
    created = app.api(token, "post", "/api/v1/generations",
                      json={"model": MODEL, "prompt": "Say hi.", "params": {"max_new_tokens": 8}})
    assert created.status_code == 202, created.text
    body = app.wait_generation(token, created.json()["id"], timeout=180)
    assert body["status"] == "done" and body["text"], body


def unchanged(app, token, stored):
    assert app.api(token, "get", f"/api/v1/generations/{stored['id']}").json() == stored


def test_redis_restarted_mid_stream_the_answer_completes_and_everything_reconnects(app, token, stored, redis_server):
    session = app.login()
    gen_id, watcher = start_watched(app, session, max_new_tokens=80)
    (worker,) = model_workers(app)
    try:
        restarted_at = time.time()
        redis_server.restart(down_s=2.0)
        end = watcher.terminal(timeout=120)
        print(f"\nRedis down 2 s mid-stream: the answer ended {time.time() - restarted_at:.1f} s after the kill")
    finally:
        watcher.close()
    body = app.wait_generation(token, gen_id, timeout=30)
    # The worker, the Celery task following it and the socket all rode the restart out: the
    # answer goes on into the fresh Redis and completes; the stored text is the whole answer.
    assert end["type"] == body["status"] == "done", (end, body)
    assert body["metrics"]["generated_tokens"] > 0 and len(body["text"]) > 20
    unchanged(app, token, stored)
    orchestrator = launcher_child(app, "orchestrator")
    assert one_worker_of(app, orchestrator).pid == worker.pid  # the same worker: none started beside it
    serves_the_next_generation(app, token)
    assert [w.pid for w in model_workers(app)] == [worker.pid]


def test_celery_worker_killed_mid_stream_the_generation_fails_with_a_reason(app, token, stored):
    session = app.login()
    gen_id, watcher = start_watched(app, session)
    (worker,) = model_workers(app)
    celery = launcher_child(app, "celery")
    try:
        celery.kill()  # SIGKILL: the task following the generation dies with it
        killed_at = time.time()
        end = watcher.terminal(timeout=60)
        print(f"\nCelery SIGKILLed mid-stream: the socket heard 'failed' {time.time() - killed_at:.1f} s later")
    finally:
        watcher.close()
    # The sweeper (in the orchestrator) noticed nobody follows it and ended it, telling the socket.
    assert end["type"] == "failed" and end["reason"] == lifecycle.RESTARTED, end
    assert time.time() - killed_at < 2 * WATCH_TTL_S + sweeper.SWEEP_EVERY_S + 5
    body = app.wait_generation(token, gen_id, timeout=10)
    assert body["status"] == "failed" and body["failure_reason"] == lifecycle.RESTARTED, body
    assert body["text"]  # the partial answer is kept
    _wait(lambda: _in_flight(app) == 0, 10, "the swept generation's job still holds the worker")
    unchanged(app, token, stored)
    # The launcher started Celery again; the same single model worker serves the next one.
    _restarted(app, "celery", celery.pid, timeout=15)
    serves_the_next_generation(app, token)
    assert [w.pid for w in model_workers(app)] == [worker.pid]


def test_celery_worker_killed_mid_comparison_both_sides_fail_and_the_next_runs(app, token, stored):
    """A battle's two generations are followed by one task: both end, with the same reason
    (one that names no model, as a blind battle needs), and a comparison runs again."""
    body = {"left_model": MODEL, "right_model": MODEL, "prompt": PROMPT, "params": LONG}
    created = app.api(token, "post", "/api/v1/comparisons", json=body)
    assert created.status_code == 202, created.text
    battle_id = created.json()["id"]
    _wait(lambda: all(_comparison(app, token, battle_id)[side]["status"] == "running" for side in ("left", "right")),
          120, "never started")
    time.sleep(1.0)  # a few tokens on each side
    launcher_child(app, "celery").kill()
    _wait(lambda: _comparison(app, token, battle_id)["finished"], 2 * WATCH_TTL_S + sweeper.SWEEP_EVERY_S + 10,
          "the comparison was left running")
    state = _comparison(app, token, battle_id)
    for side in ("left", "right"):
        assert state[side]["status"] == "failed" and state[side]["failure_reason"] == lifecycle.RESTARTED, state
    again = app.api(token, "post", "/api/v1/comparisons",
                    json={**body, "prompt": "Say hi.", "params": {"max_new_tokens": 8}}).json()
    _wait(lambda: _comparison(app, token, again["id"])["finished"], 180, "the next comparison did not finish")
    state = _comparison(app, token, again["id"])
    assert state["left"]["status"] == state["right"]["status"] == "done", state
    unchanged(app, token, stored)
    assert len(model_workers(app)) == 1


def _comparison(app, token, battle_id: str) -> dict:
    return app.api(token, "get", f"/api/v1/comparisons/{battle_id}").json()


def test_orchestrator_killed_mid_stream_the_generation_fails_with_a_reason(app, token, stored):
    session = app.login()
    gen_id, watcher = start_watched(app, session)
    (worker,) = model_workers(app)
    orchestrator = launcher_child(app, "orchestrator")
    try:
        orchestrator.kill()  # SIGKILL: its workers die with it (they are never left orphaned)
        killed_at = time.time()
        end = watcher.terminal(timeout=60)
        heard_after = time.time() - killed_at
        print(f"\nOrchestrator SIGKILLed mid-stream: the socket heard {end['type']!r} {heard_after:.1f} s later")
    finally:
        watcher.close()
    # The worker, stopped, ended what it ran; the user did not cancel it: the page and the database
    # both say it failed, and why.
    assert end["type"] == "failed", end
    body = app.wait_generation(token, gen_id, timeout=30)
    # Two honest tellings race: the worker's own FAILED event as it stops (WORKER_STOPPED), or the
    # follower seeing the worker's stopped record first (its "stopped ... send again to retry").
    assert body["status"] == "failed", body
    assert body["failure_reason"] == WORKER_STOPPED or (
        body["failure_reason"].startswith("The model worker") and "partial answer was kept" in body["failure_reason"]
    ), body
    assert body["text"]
    _wait_gone(app, worker, 15)  # not orphaned
    unchanged(app, token, stored)
    # The launcher started the orchestrator again; the next generation gets one fresh worker, its child.
    restarted = _restarted(app, "orchestrator", orchestrator.pid, timeout=15)
    serves_the_next_generation(app, token)
    assert one_worker_of(app, restarted).pid != worker.pid


def _restarted(app, part: str, old_pid: int, timeout: float) -> psutil.Process:
    """The launcher's new `part` process: it looks every 0.5 s, so the test may get here first."""
    deadline = time.time() + timeout
    while True:
        try:
            child = launcher_child(app, part)
            if child.pid != old_pid:
                return child
        except ValueError:  # none yet
            pass
        if time.time() > deadline:
            raise AssertionError(f"the launcher did not start {part} again within {timeout} s")
        time.sleep(0.2)


def _wait_gone(app, worker: psutil.Process, timeout: float) -> None:
    """Wait for `worker` to exit; if it does not, fail with its threads' stacks (SIGABRT makes
    the worker's faulthandler print them into its log)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if _gone(worker):
            return
        time.sleep(0.2)
    worker_id = worker.cmdline()[worker.cmdline().index("--worker-id") + 1]
    worker.send_signal(signal.SIGABRT)
    time.sleep(2)
    log = (app.data_dir / "logs" / f"worker-{worker_id}.log").read_text(errors="replace")
    raise AssertionError(f"the killed orchestrator's worker outlived it by {timeout} s:\n{log[-6000:]}")


def _gone(proc: psutil.Process) -> bool:
    """Exited (a zombie counts: with its parent killed, reaping it is whichever init's job)."""
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _in_flight(app) -> int:
    return sum(int(app.redis.hget(f"{app.prefix}:worker:{worker_id}", "in_flight") or 0)
               for worker_id in app.worker_pids())


def _wait(predicate, timeout: float, message: str) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(message)
