"""A node agent's tasks: the orchestrator sends them to one node's queue (`Keys.node_queue`),
where only that node's agent consumes them, in its own process (solo pool).

Each is quick (a signal, a process start) and none is acks_late: a task lost with a
dead agent is covered by the orchestrator, which fails that node's workers.

They are registered on the Celery app the agent serves (`register`), not with
`celery.shared_task` at import: orchestration/ then imports no Celery of its own (kombu's
import pulls in Django wherever Django is installed) and the app comes from its caller.
"""

from __future__ import annotations

from orchestration import agent


def start_worker(worker_id: str, spec_json: str) -> None:
    agent.current().start_worker(worker_id, spec_json)


def stop_worker(worker_id: str) -> None:
    agent.current().stop_worker(worker_id)


def kill_worker(worker_id: str) -> None:
    agent.current().kill_worker(worker_id)


def stop_orphan(pid: int) -> None:
    agent.current().stop_orphan(int(pid))


# name the orchestrator sends, function, soft and hard time limits (s)
TASKS = (
    (agent.START_TASK, start_worker, 30, 60),
    (agent.STOP_TASK, stop_worker, 10, 20),
    (agent.KILL_TASK, kill_worker, 10, 20),
    (agent.STOP_ORPHAN_TASK, stop_orphan, 30, 40),
)


def register(app) -> None:
    """Make `app` (a Celery app) run the node's tasks."""
    for name, function, soft_s, hard_s in TASKS:
        app.task(name=name, ignore_result=True, soft_time_limit=soft_s, time_limit=hard_s)(function)
