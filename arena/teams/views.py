"""Switching the team a user works in (the header's switcher)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from . import membership


@login_required
@require_POST
def switch(request):
    """Work in the chosen team from now on (a 404 for a team the user is not in), back where they were."""
    team = membership.switch(request.user, request.POST.get("team"))
    messages.success(request, f"You now work in {team.name}: what you start goes into it, and its members see it.")
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        back = "/"
    return redirect(back)
