from django import forms
from django.conf import settings
from django.core.validators import MaxLengthValidator

from arena.catalogue.fields import EntryChoiceField
from arena.catalogue.models import ModelEntry
from arena.generations.constraint_fields import add_constraint_fields, constraint
from arena.generations.tags import TagField
from arena.playground.forms import require_text
from inference.protocol import ParamError, SamplingParams

from .models import ReasonTag
from .voting import COMMENT_MAX, Note, NoteError, clean_note

LIMITS = SamplingParams.LIMITS
SIDES = ("left", "right")


def _model_field(label: str) -> forms.ModelChoiceField:
    return EntryChoiceField(
        queryset=ModelEntry.objects.enabled(), to_field_name="slug", empty_label=None, label=label,
        error_messages={"invalid_choice": "No enabled catalogue model has that slug."},
    )


def _temperature(label: str) -> forms.FloatField:
    field = forms.FloatField(required=False, label=label, min_value=LIMITS["temperature"][0],
                             max_value=LIMITS["temperature"][1])
    field.widget.attrs["step"] = "0.05"
    return field


class ComparisonForm(forms.Form):
    """Two catalogue entries, one prompt; shared parameters with a per-side system prompt and
    temperature (the page and the API share it; the API may also send whole per-side params)."""

    left_model = _model_field("Left model")
    right_model = _model_field("Right model")
    prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), strip=False)
    left_system_prompt = forms.CharField(label="Left system prompt", required=False, strip=False,
                                         widget=forms.Textarea(attrs={"rows": 2}))
    right_system_prompt = forms.CharField(label="Right system prompt", required=False, strip=False,
                                          widget=forms.Textarea(attrs={"rows": 2}))
    temperature = _temperature("Temperature (both)")
    top_p = forms.FloatField(required=False, min_value=LIMITS["top_p"][0], max_value=LIMITS["top_p"][1])
    max_new_tokens = forms.IntegerField(required=False, min_value=int(LIMITS["max_new_tokens"][0]),
                                        max_value=int(LIMITS["max_new_tokens"][1]))
    seed = forms.IntegerField(required=False, min_value=0, max_value=2**32 - 1)
    left_temperature = _temperature("Left temperature (overrides)")
    right_temperature = _temperature("Right temperature (overrides)")
    tag = TagField()
    # "Edit the prompt" of a follow-up: the battle whose turn this redoes; each side keeps that
    # side's own earlier turns (the page's, not the API's: services.start_comparison).
    continues = forms.UUIDField(required=False, widget=forms.HiddenInput)

    SHARED = ("temperature", "top_p", "max_new_tokens", "seed")

    def __init__(self, *args, side_params: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.side_params = side_params or {}  # the API's {"left": {...}, "right": {...}}
        add_constraint_fields(self)  # both sides: their answers are judged by the same rule
        for name in ("prompt", "left_system_prompt", "right_system_prompt"):
            self.fields[name].validators.append(MaxLengthValidator(settings.ARENA_MAX_PROMPT_CHARS))
        self.fields["top_p"].widget.attrs["step"] = "0.01"

    def clean_prompt(self):
        return require_text(self.cleaned_data["prompt"], "Write a prompt.")

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        if self.errors:
            return cleaned
        shared = {**{name: cleaned.get(name) for name in self.SHARED}, **constraint(cleaned)}
        for side in SIDES:
            overrides = dict(shared)
            if cleaned.get(f"{side}_temperature") is not None:
                overrides["temperature"] = cleaned[f"{side}_temperature"]
            overrides.update(self.side_params.get(side) or {})
            try:
                cleaned[f"{side}_params"] = cleaned[f"{side}_model"].params_with_defaults(overrides).to_dict()
            except ParamError as exc:
                for name, message in exc.errors.items():
                    self.add_error(None, f"{side.capitalize()} side: {name}: {message}")
        return cleaned


class NoteFields(forms.Form):
    """A verdict's optional note: reason checkboxes from the staff's list (ReasonTag) and a short
    comment. Every form that takes a person's verdict has these (comparisons, anonymous battles,
    tournament matches, a suite run's blind pairs); `note` is what actions.vote stores."""

    reasons = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple, label="Why? (optional)")
    comment = forms.CharField(required=False, strip=False, label="Comment (optional)", widget=forms.Textarea(
        attrs={"rows": 2, "maxlength": COMMENT_MAX, "placeholder": "What decided it? At most 500 characters."}))

    def __init__(self, *args, team=None, **kwargs):
        """`team`: the battle's (its own reasons are offered beside every team's)."""
        super().__init__(*args, **kwargs)
        self.fields["reasons"].choices = ReasonTag.offered(team)  # type: ignore[attr-defined]

    def clean(self):
        cleaned = super().clean() or {}
        try:
            cleaned["note"] = clean_note(cleaned.get("comment"), cleaned.get("reasons"),
                                         [slug for slug, _label in self.fields["reasons"].choices])  # type: ignore[attr-defined]
        except NoteError as exc:
            self.add_error(exc.field, str(exc))
        return cleaned

    @property
    def note(self) -> Note:
        return self.cleaned_data.get("note") or Note()


def note_form(battle, team=None) -> NoteFields:
    """The note fields filled with `battle`'s stored note (a later vote replaces it), offering the
    reasons of its team (`team`: where there is no battle yet, a suite run's pair)."""
    if battle is None:
        return NoteFields(team=team)
    return NoteFields(initial={"reasons": battle.reasons, "comment": battle.comment}, team=battle.team)


class VoteForm(NoteFields):
    outcome = forms.ChoiceField(choices=[("left", "Left is better"), ("right", "Right is better"),
                                         ("tie", "Tie"), ("both_bad", "Both are bad")])


class FollowUpForm(forms.Form):
    prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), strip=False, label="Follow-up")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["prompt"].validators.append(MaxLengthValidator(settings.ARENA_MAX_PROMPT_CHARS))

    def clean_prompt(self):
        return require_text(self.cleaned_data["prompt"], "Write a follow-up.")


class ArenaForm(forms.Form):
    """An anonymous battle: a prompt (the app picks the two models), a prompt tag, and at most a
    shared answer length (empty: ARENA_BLIND_MAX_NEW_TOKENS, for both sides alike); everything else
    is each entry's own default, sampled blind."""

    prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), strip=False)
    max_new_tokens = forms.IntegerField(required=False, label="Longest answer (tokens)",
                                        min_value=int(LIMITS["max_new_tokens"][0]),
                                        max_value=int(LIMITS["max_new_tokens"][1]))
    tag = TagField()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["prompt"].validators.append(MaxLengthValidator(settings.ARENA_MAX_PROMPT_CHARS))

    def clean_prompt(self):
        return require_text(self.cleaned_data["prompt"], "Write a prompt.")

    @property
    def params(self) -> dict:
        """The shared overrides the user chose (none: the battle's one limit, arena/battles/fair.py)."""
        n = self.cleaned_data.get("max_new_tokens")
        return {"max_new_tokens": n} if n else {}
