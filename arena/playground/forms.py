from django import forms
from django.conf import settings
from django.core.validators import MaxLengthValidator

from arena.catalogue.fields import EntryChoiceField
from arena.catalogue.models import ModelEntry
from arena.generations.constraint_fields import NAMES as CONSTRAINT_FIELDS
from arena.generations.constraint_fields import add_constraint_fields
from arena.generations.tags import TagField
from inference.protocol import ParamError, SamplingParams

LIMITS = SamplingParams.LIMITS


def require_text(value: str, message: str) -> str:
    """`value` as written (leading spaces can matter to a model), refused if it is all blank."""
    if not value.strip():
        raise forms.ValidationError(message)
    return value


class GenerationForm(forms.Form):
    """One form for the page and the API: the same rules, the same messages."""

    model = EntryChoiceField(
        queryset=ModelEntry.objects.enabled(), to_field_name="slug", empty_label=None,
        error_messages={"invalid_choice": "No enabled catalogue model has that slug."},
    )
    prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), strip=False)
    system_prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False, strip=False)
    temperature = forms.FloatField(required=False, min_value=LIMITS["temperature"][0],
                                   max_value=LIMITS["temperature"][1])
    top_p = forms.FloatField(required=False, min_value=LIMITS["top_p"][0], max_value=LIMITS["top_p"][1])
    max_new_tokens = forms.IntegerField(
        required=False, min_value=int(LIMITS["max_new_tokens"][0]), max_value=int(LIMITS["max_new_tokens"][1])
    )
    seed = forms.IntegerField(required=False, min_value=0, max_value=2**32 - 1)
    tag = TagField()
    stop = forms.CharField(
        label="Stop sequences", required=False, strip=False, widget=forms.Textarea(attrs={"rows": 2}),
        help_text=r"One per line; write \n for a line break. The answer ends before the first one.",
    )

    PARAM_FIELDS = ("temperature", "top_p", "max_new_tokens", "seed", "stop", *CONSTRAINT_FIELDS)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        add_constraint_fields(self)
        limit = settings.ARENA_MAX_PROMPT_CHARS
        for name in ("prompt", "system_prompt"):  # each is sent to the model whole
            self.fields[name].validators.append(MaxLengthValidator(limit))
        # The browser's step check counts from `min`: top_p's min of 0.01 needs a step of 0.01.
        self.fields["temperature"].widget.attrs["step"] = "0.05"
        self.fields["top_p"].widget.attrs["step"] = "0.01"

    def clean_prompt(self):
        return require_text(self.cleaned_data["prompt"], "Write a prompt.")

    def clean_stop(self):
        lines = [line for line in self.cleaned_data["stop"].splitlines() if line]
        return [line.replace("\\n", "\n").replace("\\t", "\t") for line in lines] or None

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        model = cleaned.get("model")
        if model is None or self.errors:
            return cleaned
        overrides = {name: cleaned.get(name) for name in self.PARAM_FIELDS}
        try:
            cleaned["params"] = model.params_with_defaults(overrides).to_dict()
        except ParamError as exc:
            for name, message in exc.errors.items():
                self.add_error(name if name in self.fields else None, message)
        return cleaned
