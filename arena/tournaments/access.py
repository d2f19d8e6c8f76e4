"""Who may see and act on a tournament (arena/access.py lists every kind's rule)."""

from arena.access import reachable

from .models import Tournament


def access_tournament(user, tournament_id, *, change: bool = True) -> Tournament:
    """Its owner's, and its team's to open (`change=False`)."""
    return reachable(Tournament.objects.select_related("winner"), user, tournament_id, "tournament",
                     change=change)
