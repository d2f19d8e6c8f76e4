"""The site's URLs: each app's own (its pages and its JSON API endpoints, arena/<app>/urls.py), the
admin, the health check, and the API's description and JSON 404 for any other /api/v1/ URL."""

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from arena import openapi
from arena.api.http import not_found
from arena.health import healthz

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="playground", permanent=False)),
    path("", include("arena.playground.urls")),  # the playground, a generation's page, the generations API
    path("", include("arena.battles.urls")),  # comparisons: pages and API
    path("", include("arena.leaderboard.urls")),
    path("", include("arena.categories.urls")),  # categories of prompt: the page, staff's edits, the API
    path("", include("arena.tournaments.urls")),
    path("", include("arena.suites.urls")),
    path("", include("arena.suite_runs.urls")),
    path("", include("arena.raters.urls")),  # rater links: the rater's page, the owner's links
    path("", include("arena.history.urls")),
    path("", include("arena.teams.urls")),  # the team switcher
    path("", include("arena.accounts.urls")),  # logging in, passwords, invitations, sign-up, API tokens
    path("", include("arena.catalogue.urls")),  # the models API and the staff catalogue API
    path("", include("arena.workers.urls")),  # the status page and the workers API
    path("v1/", include("arena.openai_compat.urls")),
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    # Browsers ask for /favicon.ico on pages without an icon link (and feeds, bookmarks): the page icon.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=False)),
    path("api/v1/openapi.json", openapi.openapi, name="api-openapi"),
    re_path(r"^api/v1/(?P<rest>[\s\S]*)$", not_found),  # last: a JSON 404 for any other API URL (newlines too)
]
