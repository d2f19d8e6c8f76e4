"""A node agent as a real process: `manage.py arena_agent` with a node id and a budget, its output
in a log file (tests/orchestration/test_nodes.py, test_redis_auth.py)."""

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


class AgentProcess:
    def __init__(self, node_id: str, budget_mb: float, env: dict, log_path: Path):
        self.node_id = node_id
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - open for the process lifetime, closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "arena_agent", "--node-id", node_id, "--budget-mb", str(budget_mb),
             "--exit-with-parent"],
            cwd=REPO_ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._log.close()
