"""The comparison and anonymous battle (/arena/) pages (start one, a battle's page and what it
can do) and their endpoints of the JSON API."""

from django.urls import path

from . import api, arena_views, views

urlpatterns = [
    path("compare/", views.compare, name="compare"),
    path("arena/", arena_views.arena, name="arena"),
    path("arena/<uuid:battle_id>/", arena_views.arena_battle, name="arena-battle"),
    path("arena/<uuid:battle_id>/vote", arena_views.arena_vote, name="arena-vote"),
    path("arena/<uuid:battle_id>/continue", arena_views.arena_continue, name="arena-continue"),
    path("b/<uuid:battle_id>/", views.battle_detail, name="battle-detail"),
    path("b/<uuid:battle_id>/vote", views.battle_vote, name="battle-vote"),
    path("b/<uuid:battle_id>/rerun", views.battle_rerun, name="battle-rerun"),
    path("b/<uuid:battle_id>/swap", views.battle_swap, name="battle-swap"),
    path("b/<uuid:battle_id>/continue", views.battle_continue, name="battle-continue"),
    path("api/v1/arena", api.create_anonymous, name="api-arena"),
    path("api/v1/arena/<uuid:battle_id>", api.anonymous_battle, name="api-arena-battle"),
    path("api/v1/arena/<uuid:battle_id>/vote", api.anonymous_vote, name="api-arena-vote"),
    path("api/v1/arena/<uuid:battle_id>/continue", api.anonymous_continue, name="api-arena-continue"),
    path("api/v1/comparisons", api.create_comparison, name="api-comparisons"),
    path("api/v1/comparisons/<uuid:battle_id>", api.comparison, name="api-comparison"),
    path("api/v1/comparisons/<uuid:battle_id>/vote", api.vote, name="api-comparison-vote"),
]
