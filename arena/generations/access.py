"""Who may see a generation (arena/access.py lists every kind's rule)."""

from arena.access import owned

from .models import Generation


def access_generation(user, generation_id) -> Generation:
    """Its owner's, while `visible()` (a blind battle's answer stays hidden until the reveal)."""
    return owned(Generation.objects.visible().select_related("model"), user, generation_id, "generation")
