"""Who may see, run and delete a prompt suite (arena/access.py lists every kind's rule)."""

from arena.access import reachable

from .models import Suite


def access_suite(user, suite_id, *, change: bool = True) -> Suite:
    """Its owner's, and its team's to open (`change=False`)."""
    return reachable(Suite.objects.all(), user, suite_id, "suite", change=change)
