from __future__ import annotations

from datetime import timedelta

from django import forms
from django.utils import timezone

from .models import MAX_CAP, NAME_MAX

DEFAULT_DAYS, DEFAULT_CAP = 7, 50


class RaterLinkForm(forms.Form):
    name = forms.CharField(max_length=NAME_MAX, label="Rater's name",
                           widget=forms.TextInput(attrs={"placeholder": "e.g. Support lead"}))
    expires_at = forms.DateTimeField(label="Expires", widget=forms.DateTimeInput(attrs={"type": "datetime-local"},
                                                                                  format="%Y-%m-%dT%H:%M"))
    cap = forms.IntegerField(min_value=1, max_value=MAX_CAP, label="At most (verdicts)")

    @classmethod
    def blank(cls, now) -> RaterLinkForm:
        expires = timezone.localtime(now + timedelta(days=DEFAULT_DAYS)).replace(second=0, microsecond=0)
        return cls(initial={"expires_at": expires, "cap": DEFAULT_CAP})
