from django.apps import AppConfig


class CatalogueConfig(AppConfig):
    name = "arena.catalogue"
    label = "catalogue"
    verbose_name = "Model catalogue"
