from django.apps import AppConfig


class CategoriesConfig(AppConfig):
    name = "arena.categories"
    label = "categories"
    verbose_name = "Categories of prompt"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from arena import scheduler

        from . import actions

        actions.register_run_kind()
        scheduler.register("settle category classifications", every_s=2.0, run=actions.settle)
