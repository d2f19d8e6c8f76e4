from django.core.management.base import BaseCommand

from arena.catalogue.defaults import DEFAULT_ENTRIES
from arena.catalogue.models import ModelEntry


class Command(BaseCommand):
    help = "Add the default catalogue entries that are missing (never overwrites an admin's edits)."

    def handle(self, *args, **options):
        for entry in DEFAULT_ENTRIES:
            _, created = ModelEntry.objects.get_or_create(slug=entry["slug"], defaults=entry)
            if created:
                self.stdout.write(f"Added catalogue entry {entry['slug']}")
