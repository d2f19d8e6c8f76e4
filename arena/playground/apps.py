from django.apps import AppConfig


class PlaygroundConfig(AppConfig):
    name = "arena.playground"
    label = "playground"
