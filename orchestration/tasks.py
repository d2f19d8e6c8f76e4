"""A node agent's tasks: the orchestrator sends them to one node's queue (`Keys.node_queue`),
where only that node's agent consumes them, in its own process (solo pool).

Each is quick (a signal, a process start) and none is acks_late: a task lost with a
dead agent is covered by the orchestrator, which fails that node's workers.
"""

from celery import shared_task

from orchestration import agent


@shared_task(name=agent.START_TASK, ignore_result=True, soft_time_limit=30, time_limit=60)
def start_worker(worker_id: str, spec_json: str) -> None:
    agent.current().start_worker(worker_id, spec_json)


@shared_task(name=agent.STOP_TASK, ignore_result=True, soft_time_limit=10, time_limit=20)
def stop_worker(worker_id: str) -> None:
    agent.current().stop_worker(worker_id)


@shared_task(name=agent.KILL_TASK, ignore_result=True, soft_time_limit=10, time_limit=20)
def kill_worker(worker_id: str) -> None:
    agent.current().kill_worker(worker_id)


@shared_task(name=agent.STOP_ORPHAN_TASK, ignore_result=True, soft_time_limit=30, time_limit=40)
def stop_orphan(pid: int) -> None:
    agent.current().stop_orphan(int(pid))
