"""The header's team switcher: the teams the user is in and the one they work in (a template context processor)."""

from .membership import teams_and_current


def teams(request) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    my_teams, current = teams_and_current(user)
    return {"my_teams": my_teams, "current_team": current}
