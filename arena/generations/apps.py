from django.apps import AppConfig


class GenerationsConfig(AppConfig):
    name = "arena.generations"
    # The Generation model and its migrations moved here from arena.playground. The label
    # stays "playground" so existing databases keep their table (playground_generation), their
    # migration history (app "playground"), their content types and the other apps' foreign
    # keys to "playground.generation"; a new label would need state-only migrations in three apps.
    label = "playground"
    verbose_name = "Generations"
