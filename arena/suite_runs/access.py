"""Who may see, judge and cancel a suite run (arena/access.py lists every kind's rule)."""

from arena.access import reachable

from .models import SuiteRun


def access_run(user, run_id, *, change: bool = True) -> SuiteRun:
    """Its owner's, and its team's to open (`change=False`)."""
    return reachable(SuiteRun.objects.select_related("suite", "judge"), user, run_id, "suite run", change=change)
