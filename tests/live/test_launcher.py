"""`make run`'s launcher: SIGTERM stops every process it started, model workers
included, and a private Redis is started when none answers."""


import psutil
import pytest
import redis

from arena import launcher
from harness.app import running_app

pytestmark = [pytest.mark.live, pytest.mark.slow]


def test_sigterm_leaves_nothing_behind(redis_url, tmp_path):
    with running_app(redis_url, tmp_path) as app:
        token = app.token("robot")
        gen = app.api(token, "post", "/api/v1/generations",
                      json={"model": "smollm2-135m", "prompt": "Hi", "params": {"max_new_tokens": 4}}).json()
        app.wait_generation(token, gen["id"])  # a model worker is running now
        launcher_proc = _launcher_process(app)
        family = launcher_proc.children(recursive=True)
        names = " ".join(" ".join(p.cmdline()) for p in family)
        for part in ("arena.asgi", "celery", "orchestrator", "inference.worker"):
            assert part in names
    # running_app sent SIGTERM and waited for the launcher; its whole family is gone too.
    _gone, alive = psutil.wait_procs(family, timeout=5)
    assert not alive, [p.cmdline() for p in alive]


def _launcher_process(app) -> psutil.Process:
    for proc in psutil.process_iter(["cmdline", "environ"]):
        try:
            if "arena.launcher" in " ".join(proc.info["cmdline"] or []) and \
                    (proc.info["environ"] or {}).get("ARENA_REDIS_PREFIX") == app.prefix:
                return proc
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    raise AssertionError("launcher process not found")


def test_a_private_redis_is_started_when_none_answers(monkeypatch):
    monkeypatch.setattr(launcher, "redis_answers", _only_private_answers)
    starter = launcher.Launcher({"PATH": "/usr/bin:/bin:/usr/local/bin"})
    try:
        starter.choose_redis()
        url = starter.env["REDIS_URL"]
        assert url != "redis://127.0.0.1:6379/0"
        assert redis.Redis.from_url(url).ping()
    finally:
        starter.stop()
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()


def _only_private_answers(url: str) -> bool:
    """Pretend the shared Redis on 6379 is down; really probe any other."""
    if url.startswith("redis://127.0.0.1:6379"):
        return False
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False
