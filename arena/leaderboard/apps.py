from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "arena.leaderboard"
    label = "leaderboard"

    def ready(self) -> None:
        from . import cache  # noqa: F401  (connects the battle signals that invalidate cached results)
