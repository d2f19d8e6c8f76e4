from django.apps import AppConfig


class BattlesConfig(AppConfig):
    name = "arena.battles"
    label = "battles"
    verbose_name = "Battles (comparisons, anonymous battles and tournament matches)"

    def ready(self) -> None:
        from arena.catalogue import hiding
        from arena.generations import readiness

        from . import anonymous, secrecy, tasks

        tasks.register_run_kind()
        hiding.register(secrecy.secret_models)  # catalogue's pages hide what the blind rule hides
        readiness.register(secrecy.keeps_secrets)  # no load/queue figures while a blind verdict is pending
        secrecy.register(anonymous.secret_contestants)  # an anonymous battle stays secret until its vote
