"""The workers endpoint of the JSON API (described in .openapi): staff see what the orchestrator runs."""

from django.http import JsonResponse

from arena.accounts.bearer import token_required
from arena.api.http import error, methods

from .status import for_viewer as workers_for_viewer


@methods("GET")
@token_required
def workers(request):
    """Staff only: the nodes as the orchestrator's backend reports them (Ray: address, alive or
    lost and why, resources and their use) and every worker it runs, with its node, memory and
    cold-start figures; the workers of the token owner's own unrevealed blind tournaments only
    summed up in `hidden` (and what is reserved or in use on each node withheld)."""
    if not request.user.is_staff:
        return error(403, "Listing workers needs a staff token (manage.py arena_token USERNAME --staff).")
    status = workers_for_viewer(request.user)
    fields = ("worker_id", "slug", "node", "node_name", "state", "reserved_mb", "estimate_mb", "measured_mb",
              "in_flight", "last_used", "cold_start_s", "uptime_s")
    return JsonResponse({
        "orchestrator_running": status["running"],
        "nodes": status["nodes"],
        "workers": [{name: worker.get(name) for name in fields} for worker in status["workers"]],
        "hidden": status["hidden"],
    })
