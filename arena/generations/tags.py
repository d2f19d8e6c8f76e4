"""Prompt tags: a short free label ("coding", "summarise-fr") on a generation, battle or
tournament, so the leaderboard and the history can be cut by kind of prompt."""

import re

from django import forms
from django.db import models

MAX_LENGTH = 40
_SHAPE = re.compile(r"^\w[\w-]*$")  # letters (any script), digits, '_' and '-'
SHAPE = f"up to {MAX_LENGTH} letters, digits, '-' or '_' (e.g. coding)"
HELP = f"Optional: {SHAPE}. The leaderboard and history filter by it."


def normalise(value: str | None) -> str:
    """Lower case, inner spaces as '-'; raises ValidationError for anything else odd."""
    tag = re.sub(r"\s+", "-", (value or "").strip().lower())
    if tag and (len(tag) > MAX_LENGTH or not _SHAPE.match(tag)):
        raise forms.ValidationError(f"A tag is {SHAPE}.")
    return tag


def model_field() -> models.CharField:
    return models.CharField(max_length=MAX_LENGTH, blank=True, db_index=True, help_text="A prompt tag, e.g. coding.")


class TagField(forms.CharField):
    """The forms' tag input: optional, normalised, with the user's earlier tags offered."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", HELP)
        # The length of the raw input, blanks included (normalise trims them), as the API's
        # description says (maxLength): the fuzzer found 41 blanks accepted where it refuses them.
        super().__init__(max_length=MAX_LENGTH, strip=False, **kwargs)
        self.widget.attrs.update({"list": "tag-options", "autocomplete": "off", "placeholder": "e.g. coding"})

    def clean(self, value):
        return normalise(super().clean(value))
