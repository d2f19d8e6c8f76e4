"""`make run`'s launcher starts again a process that dies on its own, and gives up (stopping
everything) on one that keeps dying. Real subprocesses, no application."""

import sys
import threading
import time

import psutil

from arena import launcher

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]
CRASHER = [sys.executable, "-c", "import sys; sys.exit(3)"]


def watch_in_thread(starter: launcher.Launcher) -> tuple[threading.Thread, dict]:
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("code", starter.watch()), daemon=True)
    thread.start()
    return thread, result


def test_a_killed_process_is_started_again_with_the_same_command():
    starter = launcher.Launcher({"PATH": "/usr/bin:/bin"})
    first = starter.spawn("celery", SLEEPER)
    thread, result = watch_in_thread(starter)
    try:
        psutil.Process(first.pid).kill()
        deadline = time.time() + 10
        while starter.procs[0][1] is first and time.time() < deadline:
            time.sleep(0.1)
        name, second = starter.procs[0]
        assert name == "celery" and second is not first and second.poll() is None
        assert psutil.Process(second.pid).cmdline() == SLEEPER
        assert "code" not in result  # still watching
    finally:
        starter.stopping = True
        thread.join(timeout=5)
        starter.stop()
    assert result["code"] == 0 and second.poll() is not None


def test_a_process_that_keeps_dying_stops_everything(monkeypatch):
    monkeypatch.setattr(launcher, "RESTART_LIMIT", 3)
    starter = launcher.Launcher({"PATH": "/usr/bin:/bin"})
    steady = starter.spawn("web", SLEEPER)
    starter.spawn("orchestrator", CRASHER)
    thread, result = watch_in_thread(starter)
    thread.join(timeout=30)
    try:
        assert result.get("code") == 1
        assert len(starter.restarts["orchestrator"]) == 3 and "web" not in starter.restarts
    finally:
        starter.stop()
    assert steady.poll() is not None  # stop() ended the healthy one too
