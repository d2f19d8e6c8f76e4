from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from arena.api import catalogue as api_catalogue
from arena.api import comparisons as api_comparisons
from arena.api import views as api
from arena.battles import views as battles
from arena.health import healthz
from arena.leaderboard import views as leaderboard
from arena.playground import views as playground
from arena.workers import views as workers

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="playground", permanent=False)),
    path("playground/", playground.playground, name="playground"),
    path("g/<uuid:generation_id>/", playground.generation_detail, name="generation-detail"),
    path("compare/", battles.compare, name="compare"),
    path("leaderboard/", leaderboard.leaderboard, name="leaderboard"),
    path("b/<uuid:battle_id>/", battles.battle_detail, name="battle-detail"),
    path("b/<uuid:battle_id>/vote", battles.battle_vote, name="battle-vote"),
    path("b/<uuid:battle_id>/rerun", battles.battle_rerun, name="battle-rerun"),
    path("b/<uuid:battle_id>/swap", battles.battle_swap, name="battle-swap"),
    path("b/<uuid:battle_id>/continue", battles.battle_continue, name="battle-continue"),
    path("", include("arena.tournaments.urls")),
    path("", include("arena.suites.urls")),
    path("", include("arena.suite_runs.urls")),
    path("", include("arena.history.urls")),
    path("", include("arena.accounts.urls")),  # logging in, passwords, invitations, sign-up, API tokens
    path("v1/", include("arena.openai_compat.urls")),
    path("status/", workers.status_page, name="status"),
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    # Browsers ask for /favicon.ico on pages without an icon link (and feeds, bookmarks): the page icon.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=False)),
    path("api/v1/openapi.json", api.openapi, name="api-openapi"),
    path("api/v1/models", api.models, name="api-models"),
    path("api/v1/generations", api.create_generation, name="api-generations"),
    path("api/v1/generations/<uuid:generation_id>", api.generation, name="api-generation"),
    path("api/v1/comparisons", api_comparisons.create_comparison, name="api-comparisons"),
    path("api/v1/comparisons/<uuid:battle_id>", api_comparisons.comparison, name="api-comparison"),
    path("api/v1/comparisons/<uuid:battle_id>/vote", api_comparisons.vote, name="api-comparison-vote"),
    path("api/v1/workers", api.workers, name="api-workers"),
    path("api/v1/catalogue", api_catalogue.catalogue, name="api-catalogue"),
    path("api/v1/catalogue/<slug:slug>", api_catalogue.catalogue_entry, name="api-catalogue-entry"),
    path("api/v1/catalogue/<slug:slug>/test", api_catalogue.test_entry, name="api-catalogue-test"),
    re_path(r"^api/v1/(?P<rest>[\s\S]*)$", api.not_found),  # last: a JSON 404 for any other API URL (newlines too)
]
