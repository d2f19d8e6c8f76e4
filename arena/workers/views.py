from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import render

from arena import streams

from .status import snapshot


@staff_member_required
def status_page(request):
    return render(request, "workers/status.html", {"status": snapshot(streams.client(), streams.keys())})
