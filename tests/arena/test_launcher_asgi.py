"""ARENA_ASGI_PROCESSES: the launcher opens one listening socket and starts that many daphne
processes accepting from it; one that dies is started again on the same socket. Real daphne
processes (serving the test settings), no Celery, orchestrator or model."""

import os
import time

import psutil
import requests

from arena import launcher


def answers(url: str) -> bool:
    try:
        requests.get(url, timeout=2)
        return True
    except requests.RequestException:
        return False


def wait_until(check, timeout: float = 60) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


def test_two_daphne_processes_serve_one_port_and_one_that_dies_comes_back_on_it():
    env = {**os.environ, "ARENA_ASGI_PROCESSES": "2", "DJANGO_SETTINGS_MODULE": "tests.settings"}
    starter = launcher.Launcher(env)
    port = launcher.free_port()
    url = f"http://127.0.0.1:{port}/static/missing.css"
    try:
        starter.start_asgi(str(port))
        assert [name for name, _ in starter.procs] == ["daphne-1", "daphne-2"]
        assert wait_until(lambda: answers(url))
        first = starter.procs[0][1]
        psutil.Process(first.pid).kill()
        first.wait(timeout=10)
        assert answers(url)  # the other one still accepts
        assert starter.restart(0)
        again = starter.procs[0][1]
        assert again is not first and again.poll() is None
        starter.procs[1][1].kill()  # only the restarted one is left to answer
        starter.procs[1][1].wait(timeout=10)
        assert wait_until(lambda: answers(url))
    finally:
        starter.stop()
    assert all(proc.poll() is not None for _name, proc in starter.procs)
