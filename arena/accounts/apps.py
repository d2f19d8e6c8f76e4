from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "arena.accounts"
    label = "accounts"
