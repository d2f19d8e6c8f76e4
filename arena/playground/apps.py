from django.apps import AppConfig


class PlaygroundConfig(AppConfig):
    """The playground page (views, forms, fragments): no models; the "playground" label
    belongs to arena.generations, which owns the Generation table and its migrations."""

    name = "arena.playground"
    label = "playground_page"
