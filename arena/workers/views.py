from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import render

from .status import page_context


@staff_member_required
def status_page(request):
    """What the orchestrator runs; the workers of the viewer's own unrevealed blind
    tournaments only as one anonymous line (status.snapshot's `hide`)."""
    return render(request, "workers/status.html", page_context(request.user))
