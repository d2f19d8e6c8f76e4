"""Who may see a generation (arena/access.py lists every kind's rule)."""

from arena.access import reachable

from .models import Generation


def access_generation(user, generation_id, *, change: bool = True) -> Generation:
    """Its owner's (and its team's to open: `change=False`), while `visible()` (a blind battle's
    answer stays hidden until the reveal)."""
    return reachable(Generation.objects.visible().select_related("model"), user, generation_id, "generation",
                    change=change)
