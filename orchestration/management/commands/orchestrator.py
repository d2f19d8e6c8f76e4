import signal

import redis
from django.conf import settings
from django.core.management.base import BaseCommand

from inference.protocol import Keys
from orchestration.backends.local import LocalBackend
from orchestration.models import DatabaseRecorder
from orchestration.policy import Config
from orchestration.service import Orchestrator


class Command(BaseCommand):
    help = "Run the orchestrator: starts, watches and stops model workers. Stops them all on SIGTERM."

    def handle(self, *args, **options):
        stopping = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stopping.append(True))
        backend = LocalBackend(settings.REDIS_URL, settings.ARENA_REDIS_PREFIX, settings.ARENA_WORKER_LOG_DIR)
        orchestrator = Orchestrator(
            backend,
            redis.Redis.from_url(settings.REDIS_URL),
            Keys(settings.ARENA_REDIS_PREFIX),
            Config(keep_alive_s=settings.ARENA_KEEP_ALIVE_S, start_timeout_s=settings.ARENA_LOAD_TIMEOUT_S),
            recorder=DatabaseRecorder(),
        )
        self.stdout.write("Orchestrator running (local backend)")
        orchestrator.run(should_stop=lambda: bool(stopping))
        self.stdout.write("Orchestrator stopped; all workers stopped")
