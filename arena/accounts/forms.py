"""The forms of joining and logging in: invitations, accepting one, open sign-up, and the login
form that tells a waiting sign-up it waits (arena/accounts/joining.py)."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.core.exceptions import ValidationError

from arena.teams.models import Team

from . import throttle
from .models import NAME_MAX_LENGTH, SignUp

MAX_INVITATION_DAYS = 90
WAITING_FOR_APPROVAL = ("Your account waits for a staff member's approval. You can log in once it is approved.")


class InvitationForm(forms.Form):
    note = forms.CharField(max_length=NAME_MAX_LENGTH, required=False, strip=True, label="For",
                           help_text="Who it is for, as you will recognise them in the list (optional).")
    email = forms.EmailField(required=False, label="E-mail (optional)",
                             help_text="The link is also sent there; it becomes the new user's address.")
    days = forms.IntegerField(min_value=1, max_value=MAX_INVITATION_DAYS, required=False,
                              label="Expires in (days)")
    team = forms.ModelChoiceField(queryset=Team.objects.all(), required=False, empty_label="No team",
                                  help_text="The new user joins it and sees its work (teams are made in the admin).")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["days"].help_text = f"Empty: {settings.ARENA_INVITATION_DAYS} days."


class JoinForm(UserCreationForm):
    """A username and a password (Django's password validators), for an invitation's new user."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["username"].widget.attrs["autocomplete"] = "username"


class SignUpForm(JoinForm):
    """Open sign-up: the same, with an e-mail address for password resets (optional)."""

    class Meta(JoinForm.Meta):  # type: ignore[name-defined]  # django-stubs give UserCreationForm no Meta
        fields = ("username", "email")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["email"].help_text = "For password resets (optional)."


class LoginForm(AuthenticationForm):
    """Django's login form (throttled, as every authenticate() is: arena/accounts/throttle.py). A sign-up that
    waits for approval is told so, but only when its password is right: anyone else learns nothing
    more than from any failed login."""

    def get_invalid_login_error(self):
        if not hasattr(self.request, throttle.REFUSED) and self._waiting_with_right_password():
            return ValidationError(WAITING_FOR_APPROVAL, code="waiting")
        return super().get_invalid_login_error()

    def _waiting_with_right_password(self) -> bool:
        sign_up = SignUp.objects.select_related("user").filter(
            user__username=self.cleaned_data.get("username"), approved_at__isnull=True, user__is_active=False).first()
        password: str = self.cleaned_data.get("password") or ""
        return sign_up is not None and sign_up.user.check_password(password)
