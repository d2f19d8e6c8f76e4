"""`manage.py prepare_models`: quantise the enabled AWQ catalogue entries whose cache is
missing, one at a time, publishing progress for the pages (arena/catalogue/preparation.py).

`make run` starts it in the background at each start; with everything cached it
exits within seconds. Niced, so the web processes and the workers answering users
keep the CPU first.
"""

import os

from django.core.management.base import BaseCommand

from arena import streams
from arena.catalogue import preparation
from arena.catalogue.models import ModelEntry

NICENESS = 10


class Command(BaseCommand):
    help = "Quantise (AWQ) the enabled catalogue entries whose cache is missing, publishing progress."

    def add_arguments(self, parser):
        parser.add_argument("--nice", type=int, default=NICENESS, help="niceness added to this process (0: none)")

    def handle(self, *args, nice: int, **options):
        if nice:
            os.nice(nice)
        entries = ModelEntry.objects.enabled().filter(kind=ModelEntry.Kind.AWQ)
        outcome = preparation.prepare_all(streams.client(), streams.keys(), entries)
        for slug, result in outcome.items():
            self.stdout.write(f"{slug}: {result}")
        if any(result.startswith("failed") for result in outcome.values()):
            raise SystemExit(1)
