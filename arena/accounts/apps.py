from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "arena.accounts"
    label = "accounts"

    def ready(self):
        from django.conf import settings
        from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
        from django.db.models.signals import post_save

        from . import sockets, throttle

        user_logged_in.connect(throttle.on_logged_in, dispatch_uid="arena-login-throttle-success")
        user_login_failed.connect(throttle.on_login_failed, dispatch_uid="arena-login-throttle-failure")
        user_logged_out.connect(sockets.close_on_logout, dispatch_uid="arena-logout-closes-sockets")
        post_save.connect(sockets.close_on_deactivation, sender=settings.AUTH_USER_MODEL,
                          dispatch_uid="arena-deactivation-closes-sockets")
