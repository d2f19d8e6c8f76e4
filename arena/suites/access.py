"""Who may see, run and delete a prompt suite (arena/access.py lists every kind's rule)."""

from arena.access import owned

from .models import Suite


def access_suite(user, suite_id) -> Suite:
    """Its owner's."""
    return owned(Suite.objects.all(), user, suite_id, "suite")
