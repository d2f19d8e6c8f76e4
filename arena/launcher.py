"""`make run`: start the whole application with embedded defaults, stop it all on Ctrl-C.

Processes: a Redis (an existing one, or a private redis-server for this session),
uvicorn (HTTP + WebSocket; ARENA_ASGI_PROCESSES of them on one listening socket, default 1),
a Celery worker (arena tasks), the orchestrator
(which starts model workers), and once per start the model preparer (which
quantises AWQ entries not cached yet in the background, then exits). Every
process runs in its own session so that the launcher alone receives Ctrl-C and
stops them in order: nothing is left behind.

A process that dies on its own (killed, crashed) is started again, as it was; the
application rides that out (see arena/generations/sweeper.py). One that keeps dying
(RESTART_LIMIT times within RESTART_WINDOW_S) is a broken setup: then everything stops.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

from inference import redis_connect

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
STOP_GRACE_S = 15
WEB_GRACE_S = 10  # the web server's own grace for open requests on SIGTERM: within STOP_GRACE_S
WS_MAX_BYTES = 1024 * 1024  # above the consumers' limit (MAX_FRAME_CHARS, 4 bytes each at most)
RESTART_LIMIT = 5
RESTART_WINDOW_S = 60.0


def log(message: str) -> None:
    print(f"[arena] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def redis_answers(url: str) -> bool:
    try:
        return bool(redis_connect.connect(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def asgi_command(bind: list[str]) -> list[str]:
    """uvicorn serving arena.asgi on `bind` (--host/--port, or --fd of a listening socket), chosen over
    daphne by measurement (docs/performance.md, "The ASGI server"): uvloop, httptools and the websockets
    library's sans-I/O protocol. No lifespan (Django's ASGI application has none); no access log (nor
    a line per WebSocket opened and closed: warnings and errors only); no
    proxy headers (Django reads X-Forwarded-* itself, and only with ARENA_BEHIND_PROXY); frames over
    WS_MAX_BYTES closed by the server (the consumers close their own limit's with 1009 first). On
    SIGTERM it closes open sockets (1012) and gives requests WEB_GRACE_S to finish."""
    return [PY, "-m", "uvicorn", *bind, "--loop", "uvloop", "--http", "httptools", "--ws", "websockets-sansio",
            "--ws-max-size", str(WS_MAX_BYTES), "--lifespan", "off", "--no-access-log", "--log-level", "warning",
            "--no-proxy-headers", "--timeout-graceful-shutdown", str(WEB_GRACE_S), "arena.asgi:application"]


def celery_threads(env: dict[str, str]) -> str:
    """ARENA_CELERY_CONCURRENCY, or enough threads for every run the fair line may admit at once
    (each holds one while it runs: arena/generations/admission.py) and the short tasks beside them."""
    if env.get("ARENA_CELERY_CONCURRENCY"):
        return env["ARENA_CELERY_CONCURRENCY"]
    return str(max(32, int(env.get("ARENA_MAX_CONCURRENT_GENERATIONS", "16")) + 16))


class Launcher:
    def __init__(self, env: dict[str, str]):
        self.env = env
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.commands: dict[str, list[str]] = {}
        self.restarts: dict[str, list[float]] = {}  # name -> when it was restarted (monotonic)
        self.redis_dir: str | None = None
        self.stopping = False
        self.oneshots: set[str] = set()  # processes that end by themselves: not started again
        self.fds: dict[str, tuple[int, ...]] = {}  # name -> the descriptors it inherits (restarts too)
        self.listener: socket.socket | None = None

    # --- Redis ------------------------------------------------------------------------
    def choose_redis(self) -> None:
        """REDIS_URL when set; else a local Redis on 6379 if one answers; else a private one."""
        if self.env.get("REDIS_URL"):
            if not redis_answers(self.env["REDIS_URL"]):
                sys.exit(f"REDIS_URL={redis_connect.redact(self.env['REDIS_URL'])} does not answer "
                         "(or refused this password, or its TLS certificate: docs/operations.md).")
            return
        if redis_answers("redis://127.0.0.1:6379/0"):
            self.env["REDIS_URL"] = "redis://127.0.0.1:6379/0"
            return
        server = shutil.which("redis-server")
        if not server:
            sys.exit("No Redis answers on 127.0.0.1:6379 and redis-server is not installed "
                     "(apt-get install redis-server).")
        port = free_port()
        self.redis_dir = tempfile.mkdtemp(prefix="arena-redis-")
        self.spawn("redis", [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", self.redis_dir])
        self.env["REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
        for _ in range(50):
            if redis_answers(self.env["REDIS_URL"]):
                break
            time.sleep(0.1)
        log(f"Started a private Redis on port {port} for this session")

    # --- processes --------------------------------------------------------------------
    def spawn(self, name: str, cmd: list[str], *, log_path: Path | None = None,
              oneshot: bool = False, pass_fds: tuple[int, ...] = ()) -> subprocess.Popen:
        """Start `cmd`; `oneshot`: one that ends by itself, so it is not started again; `log_path`:
        where its output goes instead of this terminal; `pass_fds`: descriptors it inherits."""
        if log_path is None:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env, start_new_session=True, pass_fds=pass_fds)
        else:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(log_path, "ab") as output:
                proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env, start_new_session=True, stdout=output,
                                        stderr=output, pass_fds=pass_fds)
        self.procs.append((name, proc))
        self.commands[name] = cmd
        self.fds[name] = pass_fds
        if oneshot:
            self.oneshots.add(name)
        return proc

    def restart(self, index: int) -> bool:
        """Start the exited process at `index` again; False when it keeps dying."""
        name, proc = self.procs[index]
        now = time.monotonic()
        recent = [at for at in self.restarts.get(name, []) if now - at < RESTART_WINDOW_S]
        if len(recent) >= RESTART_LIMIT:
            log(f"{name} exited with code {proc.returncode}, {len(recent)} restarts within "
                f"{RESTART_WINDOW_S:.0f} s; stopping")
            return False
        log(f"{name} exited with code {proc.returncode}; starting it again")
        self.restarts[name] = [*recent, now]
        self.procs[index] = (name, subprocess.Popen(self.commands[name], cwd=ROOT, env=self.env,
                                                    start_new_session=True, pass_fds=self.fds.get(name, ())))
        return True

    def manage(self, *args: str) -> None:
        subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=self.env, check=True)

    def start(self) -> str:
        self.choose_redis()
        self.manage("migrate", "--noinput", "-v", "0")
        self.manage("seed_catalogue")
        self.manage("ensure_admin")
        port = self.env.get("PORT", "8000")
        self.spawn("orchestrator", [PY, "manage.py", "orchestrator"])
        queue = f"{self.env.get('ARENA_REDIS_PREFIX', 'arena')}.control"
        self.spawn("celery", [PY, "-m", "celery", "-A", "arena", "worker", "--pool", "threads",
                              "--concurrency", celery_threads(self.env),
                              "-Q", queue, "--loglevel", "WARNING", "--without-mingle", "--without-gossip",
                              "-n", f"arena-{os.getpid()}@%h"])
        self.start_asgi(port)
        if self.env.get("ARENA_PREPARE_MODELS", "1") != "0":  # 0: AWQ entries quantise at their first use
            self.start_preparer()
        return f"http://127.0.0.1:{port}/"

    def start_asgi(self, port: str) -> None:
        """One uvicorn, or ARENA_ASGI_PROCESSES of them accepting from one listening socket that this
        launcher opens (the kernel hands each connection to one of them). Each process has its own
        stream hub (arena/streams.py), so a generation watched from several is read once by each."""
        processes = int(self.env.get("ARENA_ASGI_PROCESSES", "1"))
        if processes <= 1:
            self.spawn("web", asgi_command(["--host", "127.0.0.1", "--port", port]))
            return
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", int(port)))
        self.listener.listen(1024)
        fd = self.listener.fileno()
        for i in range(processes):
            self.spawn(f"web-{i + 1}", asgi_command(["--fd", str(fd)]), pass_fds=(fd,))

    def start_preparer(self) -> None:
        """AWQ entries not quantised yet are quantised now, in the background (arena/catalogue/preparation.py)."""
        log_path = data_dir(self.env) / "logs" / "prepare_models.log"
        self.spawn("prepare_models", [PY, "manage.py", "prepare_models"], log_path=log_path, oneshot=True)
        log(f"Preparing models not quantised yet in the background (progress on /status/, log in {log_path})")

    def watch(self) -> int:
        """Wait for a signal, starting again whatever dies on its own meanwhile."""
        while not self.stopping:
            for index, (name, proc) in enumerate(self.procs):
                if proc.poll() is None or self.stopping:
                    continue
                if name in self.oneshots:
                    self.procs.pop(index)
                    log(f"{name} finished" + (f" with code {proc.returncode}" if proc.returncode else ""))
                    break  # the list changed under the loop
                if not self.restart(index):
                    return 1
            time.sleep(0.5)
        return 0

    def stop(self) -> None:
        for _name, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for name, proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log(f"{name} did not stop in time; killing it")
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if self.listener is not None:
            self.listener.close()
        if self.redis_dir:
            shutil.rmtree(self.redis_dir, ignore_errors=True)
        log("Stopped.")


def data_dir(env: dict[str, str]) -> Path:
    return Path(env.get("ARENA_DATA_DIR", ROOT / "var"))


def main() -> int:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "arena.settings", "PYTHONUNBUFFERED": "1",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    launcher = Launcher(env)

    def on_signal(signum, frame):
        launcher.stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    code = 1
    try:
        url = launcher.start()
        log(f"LLM Arena is running at {url}  (log in as admin; Ctrl-C stops everything)")
        log(f"Password: the one printed at first run, also in {data_dir(env) / 'admin-password.txt'}")
        code = launcher.watch()
    finally:
        launcher.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
