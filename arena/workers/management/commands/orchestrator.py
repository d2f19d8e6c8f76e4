import signal

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from arena import scheduler
from arena.workers.models import DatabaseRecorder
from inference import redis_connect
from inference.protocol import Keys
from orchestration.policy import Config
from orchestration.service import Orchestrator


def build_backend():
    """The backend ARENA_ORCHESTRATOR_BACKEND names: "local" (subprocesses here) or "ray" (actors on
    the Ray cluster at RAY_ADDRESS)."""
    name = settings.ARENA_ORCHESTRATOR_BACKEND
    if name == "local":
        from orchestration import config
        from orchestration.backends.local import LocalBackend

        return LocalBackend(settings.REDIS_URL, settings.ARENA_REDIS_PREFIX, settings.ARENA_WORKER_LOG_DIR,
                            secrets_key=settings.ARENA_SECRETS_KEY, spares=config.current().spare_workers)
    if name == "ray":
        from orchestration import config
        from orchestration.backends import ray_cluster

        address = config.current().ray_address
        if not address:
            raise CommandError("ARENA_ORCHESTRATOR_BACKEND=ray needs RAY_ADDRESS, the address of the Ray "
                               "cluster's head (docs/operations.md, Several machines).")
        ray_cluster.connect(address)
        return ray_cluster.RayBackend(settings.ARENA_REDIS_PREFIX)
    raise CommandError(f"ARENA_ORCHESTRATOR_BACKEND must be 'local' or 'ray', not {name!r}.")


class Command(BaseCommand):
    help = "Run the orchestrator: starts, watches and stops model workers. Stops them all on SIGTERM."

    def handle(self, *args, **options):
        backend = build_backend()
        stopping = []
        # After the backend: joining a Ray cluster installs Ray's own handlers, and this process
        # must stop its workers in order on SIGTERM.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stopping.append(True))
        client = redis_connect.connect(settings.REDIS_URL)
        keys = Keys(settings.ARENA_REDIS_PREFIX)
        orchestrator = Orchestrator(
            backend,
            client,
            keys,
            Config(keep_alive_s=settings.ARENA_KEEP_ALIVE_S, start_timeout_s=settings.ARENA_LOAD_TIMEOUT_S),
            recorder=DatabaseRecorder(),
        )
        self.stdout.write(f"Orchestrator running ({settings.ARENA_ORCHESTRATOR_BACKEND} backend)")
        # This process always runs, once: its loop also runs the periodic jobs the apps registered
        # (arena/scheduler.py: the line's admitter, the generation sweeper, the suite-run kicker,
        # the share-link view counts).

        def on_tick() -> None:
            scheduler.run_due()

        orchestrator.run(should_stop=lambda: bool(stopping), on_tick=on_tick)
        self.stdout.write("Orchestrator stopped; all workers stopped")
