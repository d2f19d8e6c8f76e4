"""The leaderboard's page and its JSON API."""

from django.urls import path

from . import api, views

urlpatterns = [
    path("leaderboard/", views.leaderboard, name="leaderboard"),
    path("api/v1/leaderboard", api.leaderboard, name="api-leaderboard"),
]
