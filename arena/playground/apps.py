from django.apps import AppConfig


class PlaygroundConfig(AppConfig):
    """The playground page (views, forms, fragments): no models; the Generation table and its
    migrations belong to arena.generations."""

    name = "arena.playground"
