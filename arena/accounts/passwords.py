"""Changing one's own password (/accounts/password_change/, Django's view and form) under the login
throttle: a wrong old password counts as a failed login of that username from this client, so a
borrowed session cannot be used to guess the password either; a held try gets the lockout page
(arena/accounts/throttle.py) instead of another check."""

from __future__ import annotations

from django.contrib.auth.forms import PasswordChangeForm
from django.contrib.auth.signals import user_login_failed
from django.contrib.auth.views import PasswordChangeView
from django.core.exceptions import ValidationError

from . import throttle


class ThrottledPasswordChangeForm(PasswordChangeForm):
    def __init__(self, user, *args, request=None, **kwargs):
        self.request = request
        super().__init__(user, *args, **kwargs)

    def clean_old_password(self):
        username = self.user.get_username()
        verdict = throttle.check(self.request, username)
        if not verdict.allowed:
            setattr(self.request, throttle.REFUSED, verdict)  # the middleware answers with the lockout page
            raise ValidationError("Too many failed attempts.", code="locked_out")
        try:
            return super().clean_old_password()
        except ValidationError:
            # What authenticate() sends on a failure: the throttle counts it.
            user_login_failed.send(sender=__name__, credentials={"username": username}, request=self.request)
            raise


class ThrottledPasswordChangeView(PasswordChangeView):
    form_class = ThrottledPasswordChangeForm

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "request": self.request}
