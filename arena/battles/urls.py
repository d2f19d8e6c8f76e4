"""The comparison pages (start one, a battle's page and what it can do) and the comparison endpoints
of the JSON API."""

from django.urls import path

from . import api, views

urlpatterns = [
    path("compare/", views.compare, name="compare"),
    path("b/<uuid:battle_id>/", views.battle_detail, name="battle-detail"),
    path("b/<uuid:battle_id>/vote", views.battle_vote, name="battle-vote"),
    path("b/<uuid:battle_id>/rerun", views.battle_rerun, name="battle-rerun"),
    path("b/<uuid:battle_id>/swap", views.battle_swap, name="battle-swap"),
    path("b/<uuid:battle_id>/continue", views.battle_continue, name="battle-continue"),
    path("api/v1/comparisons", api.create_comparison, name="api-comparisons"),
    path("api/v1/comparisons/<uuid:battle_id>", api.comparison, name="api-comparison"),
    path("api/v1/comparisons/<uuid:battle_id>/vote", api.vote, name="api-comparison-vote"),
]
