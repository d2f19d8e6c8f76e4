"""The rater's page (by its link's token) and the run owner's rater links."""

from django.urls import path

from . import api, views

urlpatterns = [
    path("rate/<str:token>/", views.rate, name="rater-page"),
    path("suite-runs/<uuid:run_id>/raters/new", views.link_new, name="rater-link-new"),
    path("suite-runs/<uuid:run_id>/raters/<int:link_id>/revoke", views.link_revoke, name="rater-link-revoke"),
    path("api/v1/suite-runs/<uuid:run_id>/raters", api.run_raters, name="api-suite-run-raters"),
]
