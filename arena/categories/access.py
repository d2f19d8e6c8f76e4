"""Who may change a prompt's category (arena/access.py lists every kind's rule)."""

from arena.access import owned

from .models import Assignment


def access_assignment(user, assignment_id) -> Assignment:
    """Its owner's (the owner of the battle or suite whose prompt it is); anyone else's is a 404."""
    return owned(Assignment.objects.select_related("category"), user, assignment_id, "prompt")
