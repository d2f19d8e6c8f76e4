"""The leaderboard's page and its JSON API."""

from django.urls import path

from . import api, views

urlpatterns = [
    path("leaderboard/", views.leaderboard, name="leaderboard"),
    path("leaderboard/like/", views.like, name="leaderboard-like"),
    path("api/v1/leaderboard", api.leaderboard, name="api-leaderboard"),
    path("api/v1/leaderboard/categories", api.categories, name="api-leaderboard-categories"),
    path("api/v1/leaderboard/similar", api.similar_prompts, name="api-leaderboard-similar"),
]
