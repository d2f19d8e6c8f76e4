from django.apps import AppConfig


class BattlesConfig(AppConfig):
    name = "arena.battles"
    label = "battles"
    verbose_name = "Battles (comparisons and tournament matches)"

    def ready(self) -> None:
        from arena.catalogue import hiding

        from . import secrecy, tasks

        tasks.register_run_kind()
        hiding.register(secrecy.secret_models)  # catalogue's pages hide what the blind rule hides
