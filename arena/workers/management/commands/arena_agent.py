import logging
import re

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from inference import redis_connect
from inference.protocol import Keys
from inference.worker import die_with_parent
from orchestration.agent import Agent, serve
from orchestration.backends.local import LocalBackend
from orchestration.resources import node_budget_mb

NODE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class Command(BaseCommand):
    help = ("Run a node agent: start and stop model workers on this machine for the orchestrator "
            "(ARENA_ORCHESTRATOR_BACKEND=nodes). Stops its workers on SIGTERM.")

    def add_arguments(self, parser):
        parser.add_argument("--node-id", required=True, help="this machine's name among the nodes, e.g. gpu1")
        parser.add_argument("--budget-mb", type=float, default=None,
                            help="memory for models here (default: detected; ARENA_NODE_MEMORY_MB overrides)")
        parser.add_argument("--exit-with-parent", action="store_true",
                            help="exit when the process that started this one dies (for tests and supervisors)")

    def handle(self, *args, node_id, budget_mb, exit_with_parent, **options):
        if exit_with_parent:
            die_with_parent()
        if not NODE_ID.match(node_id):
            raise CommandError("--node-id: letters, digits, '.', '_' and '-' only (at most 63).")
        budget = node_budget_mb() if budget_mb is None else budget_mb
        if budget <= 0:
            raise CommandError("--budget-mb must be positive.")
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s agent {node_id} %(levelname)s %(message)s")
        from arena.celery import app

        backend = LocalBackend(settings.REDIS_URL, settings.ARENA_REDIS_PREFIX,
                               settings.ARENA_WORKER_LOG_DIR / f"node-{node_id}", budget_mb=budget, node_id=node_id,
                               secrets_key=settings.ARENA_SECRETS_KEY)
        keys = Keys(settings.ARENA_REDIS_PREFIX)
        agent = Agent(node_id, budget, redis_connect.connect(settings.REDIS_URL), keys, backend)
        self.stdout.write(f"Node agent {node_id} running: {budget:.0f} MB for models, queue {agent.queue}")
        self.stdout.flush()
        code = serve(app, agent)
        self.stdout.write(f"Node agent {node_id} stopped; its workers stopped")
        if code:
            raise SystemExit(code)
