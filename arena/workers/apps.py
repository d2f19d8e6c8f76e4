from django.apps import AppConfig


class WorkersConfig(AppConfig):
    """The orchestrator's Django side: worker records, the status page, the orchestrator command."""

    name = "arena.workers"
    # The label these models had when they lived in orchestration/: it names their table
    # (orchestration_workerprocess), their migration history and their content types, so
    # existing databases keep working without a data migration.
    label = "orchestration"
    verbose_name = "Workers"
