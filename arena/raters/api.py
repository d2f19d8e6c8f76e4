"""GET /api/v1/suite-runs/<id>/raters: the run's rater links and how far their raters agree, as
the run page's "Raters by link" section shows them (arena.raters.overview), for whoever may read
the run (its owner, its team's members); no link's token is kept, so none is given. The links'
verdicts are in the run's JSON export once each link has ended (names are revealed then)."""

from __future__ import annotations

from django.http import JsonResponse

from arena.accounts.bearer import token_required
from arena.api.http import methods
from arena.suite_runs.access import access_run

from .overview import overview, overview_json
from .views import CLOCK


@methods("GET")
@token_required
def run_raters(request, run_id):
    run = access_run(request.user, run_id, change=False)
    return JsonResponse(overview_json(overview(run, CLOCK())))
