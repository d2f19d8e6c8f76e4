from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "arena.leaderboard"
    label = "leaderboard"
