"""The whole application, started as `make run` starts it (arena.launcher), for the
live tests and the benchmarks: uvicorn, a Celery worker, the orchestrator and real model workers, on
real Redis, with a data directory and a Redis prefix of its own. It stops by itself."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil
import redis
import requests

ROOT = Path(__file__).resolve().parents[1]
# Debian's chromium (Playwright's own download does not work here), as every browser test launches it.
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LiveApp:
    url: str
    env: dict
    data_dir: Path
    prefix: str
    redis: redis.Redis
    admin_password: str

    def manage(self, *args: str) -> str:
        out = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env,
                             capture_output=True, text=True, check=True, timeout=120)
        return out.stdout.strip()

    def token(self, username: str) -> str:
        """A new API token of `username`, made a service account (no password) if it does not exist."""
        return self.manage("arena_token", username, "--create-service-account").splitlines()[-1]

    def register_token(self, username: str, token: str) -> None:
        """Store `token` as `username`'s API token (as ApiToken.issue stores one): a token known
        before the app started, for an endpoint entry whose key variable the app was started with."""
        code = ("from django.contrib.auth import get_user_model; from arena.accounts.models import ApiToken, _digest; "
                f"ApiToken.objects.get_or_create(user=get_user_model().objects.get(username={username!r}), "
                f"digest=_digest({token!r}), defaults={{'hint': {token[:12]!r}}})")
        self.manage("shell", "-c", code)

    def login(self, username: str = "admin", password: str | None = None) -> requests.Session:
        session = requests.Session()
        page = session.get(self.url + "accounts/login/", timeout=10)
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        response = session.post(self.url + "accounts/login/", timeout=10, data={
            "username": username, "password": password or self.admin_password, "csrfmiddlewaretoken": csrf,
        }, headers={"Referer": self.url + "accounts/login/"})
        assert "sessionid" in session.cookies, response.text[:500]
        return session

    def user(self, username: str) -> str:
        """A user of this app (made once) and their password: a test that must not share the
        admin's state (a blind verdict pending withholds load figures) logs in as its own."""
        password = f"pw-{username}-{self.prefix}"
        self.manage("shell", "-c", (
            "from django.contrib.auth import get_user_model; U = get_user_model(); "
            f"U.objects.filter(username={username!r}).exists() or U.objects.create_user({username!r}, "
            f"password={password!r})"))
        return password

    def log_in_page(self, page, next_path: str = "playground/", username: str = "admin",
                    password: str | None = None) -> None:
        """Log a browser page in (as the admin unless told) through the login form, landing on `next_path`."""
        page.goto(self.url + next_path)
        page.fill("#id_username", username)
        page.fill("#id_password", password or self.admin_password)
        page.click("button[type=submit]")
        page.wait_for_url("**/" + next_path)

    def api(self, token: str, method: str, path: str, **kwargs) -> requests.Response:
        kwargs.setdefault("timeout", 15)
        return requests.request(method, self.url + path.lstrip("/"),
                                headers={"Authorization": f"Bearer {token}"}, **kwargs)

    def wait_generation(self, token: str, gen_id: str, timeout: float = 240, until=("done", "failed", "cancelled")):
        deadline = time.time() + timeout
        while time.time() < deadline:
            body = self.api(token, "get", f"/api/v1/generations/{gen_id}").json()
            if body["status"] in until:
                return body
            time.sleep(0.25)
        raise AssertionError(f"generation {gen_id} still {body['status']} after {timeout} s")

    def start_from_page(self, session: requests.Session, prompt: str, **params) -> str:
        """Send the playground form as a browser without JavaScript would; the generation's id."""
        page = session.get(self.url + "playground/", timeout=10)
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        response = session.post(self.url + "playground/", timeout=10, allow_redirects=False,
                                data={"model": "smollm2-135m", "prompt": prompt, "csrfmiddlewaretoken": csrf, **params},
                                headers={"Referer": self.url + "playground/"})
        assert response.status_code == 302, response.text[:2000]
        return response.headers["Location"].strip("/").split("/")[-1]  # /g/<id>/

    def ws_url(self, gen_id: str, json_frames: bool = False) -> str:
        url = self.url.replace("http", "ws", 1) + f"ws/generations/{gen_id}/"
        return url + "?format=json" if json_frames else url

    def ws_headers(self, session: requests.Session) -> dict[str, str]:
        """What the app's own page sends: its session cookie and its origin (scheme, host and port)."""
        cookie = "; ".join(f"{k}={v}" for k, v in session.cookies.items())
        return {"Cookie": cookie, "Origin": self.url.rstrip("/")}

    def wait_tokens(self, gen_id: str, at_least: int = 3, timeout: float = 240) -> None:
        key = f"{self.prefix}:gen:{gen_id}:events"
        deadline = time.time() + timeout
        while time.time() < deadline:
            if sum(1 for _id, f in self.redis.xrange(key) if f[b"type"] == b"token") >= at_least:
                return
            time.sleep(0.1)
        raise AssertionError("no tokens streamed")

    def worker_pid(self, slug: str) -> int:
        """The pid of the one live worker serving `slug` (worker ids are "<slug>-<8 hex>")."""
        (pid,) = [pid for worker_id, pid in self.worker_pids().items() if worker_id.rsplit("-", 1)[0] == slug]
        return pid

    def worker_pids(self) -> dict[str, int]:
        pids = {}
        for key in self.redis.scan_iter(match=f"{self.prefix}:worker:*", count=500):
            key = key.decode()
            if key.count(":") != 2:
                continue
            status = self.redis.hgetall(key)
            if status.get(b"state") in (b"starting", b"ready"):
                pids[key.split(":")[-1]] = int(status[b"pid"])
        return pids


def launcher_child(app, part: str) -> psutil.Process:
    """The one child of this app's launcher (found by its Redis prefix) whose command line names
    `part` ("celery", "orchestrator"): to kill it as a crash would."""
    (launcher,) = [p for p in psutil.process_iter(["cmdline", "environ"])
                   if "arena.launcher" in " ".join(p.info["cmdline"] or [])
                   and (p.info["environ"] or {}).get("ARENA_REDIS_PREFIX") == app.prefix]
    (child,) = [c for c in launcher.children() if part in " ".join(c.cmdline())]
    return child


@contextmanager
def running_app(redis_url: str, data_dir: Path, **env_overrides: str):
    """Start the launcher with its own data dir, Redis prefix and port; stop it on exit. An
    ARENA_REDIS_PREFIX among `env_overrides` is the app's prefix (one known before it starts, as
    the Ray nodes of tests/live/test_ray_backend.py need in their own environment)."""
    prefix = env_overrides.get("ARENA_REDIS_PREFIX") or f"arena-live-{uuid.uuid4().hex[:8]}"
    port = free_port()
    env = {
        **os.environ,
        "ARENA_DATA_DIR": str(data_dir),
        "ARENA_REDIS_PREFIX": prefix,
        "REDIS_URL": redis_url,
        "PORT": str(port),
        "ARENA_DISCONNECT_GRACE_S": "1",
        "ARENA_CELERY_CONCURRENCY": "8",
        # The live tests and benchmarks start many generations as one user: per-user limits
        # off unless a test passes its own (see arena/generations/limits.py).
        "ARENA_RATE_LIMIT_PER_MIN": "0",
        "ARENA_MAX_CONCURRENT_PER_USER": "0",
        "ARENA_MAX_SOCKETS_PER_USER": "0",  # a load's viewers are a few users' many sockets
        # No background AWQ preparation (tests/arena/catalogue/test_preparation.py has its own):
        # on a fresh machine it would quantise beside every test of the session.
        "ARENA_PREPARE_MODELS": "0",
        "DJANGO_SETTINGS_MODULE": "arena.settings",
        # An API token of this app known before it starts: the key of an openai-engine entry
        # pointing at the app's own /v1 (tests/live/test_engines.py registers it).
        "ARENA_ENDPOINT_KEY_LIVE_SELF": "arena_" + secrets.token_urlsafe(32),
        **env_overrides,
    }
    log_path = data_dir / "launcher.log"
    log = open(log_path, "wb")  # noqa: SIM115 - the launcher writes to it until the finally below
    proc = subprocess.Popen([sys.executable, "-m", "arena.launcher"], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_healthy(url, proc, log_path)
        password = (data_dir / "admin-password.txt").read_text().strip()
        yield LiveApp(url, env, data_dir, prefix, redis.Redis.from_url(redis_url), password)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        finally:
            log.close()
            client = redis.Redis.from_url(redis_url)
            for key in client.scan_iter(match=f"{prefix}:*", count=1000):
                client.delete(key)


def _wait_healthy(url: str, proc: subprocess.Popen, log_path: Path, timeout: float = 180) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the launcher exited early:\n{log_path.read_text()[-3000:]}")
        try:
            if requests.get(url + "healthz", timeout=3).status_code == 200:
                return
        except requests.RequestException:
            pass  # not listening yet
        time.sleep(0.5)
    raise RuntimeError(f"the application did not become healthy:\n{log_path.read_text()[-3000:]}")
