"""Who may see, judge and cancel a suite run (arena/access.py lists every kind's rule)."""

from arena.access import owned

from .models import SuiteRun


def access_run(user, run_id) -> SuiteRun:
    """Its owner's."""
    return owned(SuiteRun.objects.select_related("suite", "judge"), user, run_id, "suite run")
