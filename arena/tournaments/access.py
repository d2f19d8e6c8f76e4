"""Who may see and act on a tournament (arena/access.py lists every kind's rule)."""

from arena.access import owned

from .models import Tournament


def access_tournament(user, tournament_id) -> Tournament:
    """Its owner's."""
    return owned(Tournament.objects.select_related("winner"), user, tournament_id, "tournament")
