"""The whole OpenAPI document of the v1 API (/api/v1/openapi.json), assembled from every app's own
description (arena/<app>/openapi.py) on the shared skeleton (arena.api.openapi.document).

It sits at the top with the URLs, the only place that may import every app."""

from django.http import JsonResponse
from django.views.decorators.http import require_GET

from arena.accounts import openapi as accounts
from arena.api.openapi import document
from arena.battles import openapi as battles
from arena.catalogue import openapi as catalogue
from arena.categories import openapi as categories
from arena.generations.openapi import GENERATION
from arena.history import openapi as history
from arena.leaderboard import openapi as leaderboard
from arena.playground import openapi as playground
from arena.raters import openapi as raters
from arena.suite_runs import openapi as suite_runs
from arena.suites import openapi as suites
from arena.tournaments import openapi as tournaments
from arena.workers import openapi as workers

SPEC = document(
    {"Model": catalogue.MODEL, "Generation": GENERATION, "Comparison": battles.COMPARISON},
    catalogue.MODELS_PATHS, playground.OPENAPI_PATHS, battles.OPENAPI_PATHS, workers.OPENAPI_PATHS,
    tournaments.OPENAPI_PATHS, suites.OPENAPI_PATHS, suite_runs.OPENAPI_PATHS, raters.OPENAPI_PATHS,
    history.OPENAPI_PATHS,
    catalogue.OPENAPI_PATHS, accounts.OPENAPI_PATHS, leaderboard.OPENAPI_PATHS, categories.OPENAPI_PATHS,
)


@require_GET
def openapi(request):
    return JsonResponse(SPEC)
