"""Changing one's own password (/accounts/password_change/, Django's view and form) under the login
throttle: a wrong old password counts as a failed login of that username, so a borrowed session
cannot be used to guess the password either; a locked username gets the lockout page
(arena/accounts/throttle.py) instead of another try."""

from __future__ import annotations

from axes.handlers.proxy import AxesProxyHandler
from django.contrib.auth.forms import PasswordChangeForm
from django.contrib.auth.signals import user_login_failed
from django.contrib.auth.views import PasswordChangeView
from django.core.exceptions import ValidationError


class ThrottledPasswordChangeForm(PasswordChangeForm):
    def __init__(self, user, *args, request=None, **kwargs):
        self.request = request
        super().__init__(user, *args, **kwargs)

    def clean_old_password(self):
        credentials = {"username": self.user.get_username()}
        if not AxesProxyHandler.is_allowed(self.request, credentials):
            self.request.axes_locked_out = True  # axes' middleware answers with the lockout page
            raise ValidationError("Too many failed attempts.", code="locked_out")
        try:
            return super().clean_old_password()
        except ValidationError:
            # What authenticate() sends on a failure: axes counts it (and may lock the username now).
            user_login_failed.send(sender=__name__, credentials=credentials, request=self.request)
            raise


class ThrottledPasswordChangeView(PasswordChangeView):
    form_class = ThrottledPasswordChangeForm

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "request": self.request}
