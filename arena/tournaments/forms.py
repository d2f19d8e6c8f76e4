from django import forms
from django.conf import settings
from django.core.validators import MaxLengthValidator

from arena.battles import fair
from arena.battles.forms import NoteFields
from arena.catalogue.fields import EntryChoiceField
from arena.catalogue.models import ModelEntry
from arena.generations.constraint_fields import add_constraint_fields, constraint
from arena.generations.tags import TagField
from inference.protocol import ParamError, SamplingParams
from inference.structured import engine_problem

from . import bracket
from .models import BLIND_MIN_TEMPERATURE, BLIND_MIN_TOP_P, Tournament, blind_params_problem

LIMITS = SamplingParams.LIMITS
MAX_CONTESTANTS = max(bracket.SIZES)
# Every answer compared gets the one limit (arena/battles/fair.py), never a contestant's own default.
LIMIT_HELP = "the same for every contestant, whatever its own default; empty: {n}."
PARAM_FIELDS = ("temperature", "top_p", "max_new_tokens")  # no seed: each blind match draws its own


def _prompt_field(label="Prompt") -> forms.CharField:
    return forms.CharField(label=label, widget=forms.Textarea(attrs={"rows": 4}), strip=False)


def _limit_size(form, *names) -> None:
    """ARENA_MAX_PROMPT_CHARS on these fields, read when the form is made (as the other forms do)."""
    for name in names:
        form.fields[name].validators.append(MaxLengthValidator(settings.ARENA_MAX_PROMPT_CHARS))


def _clean_prompt(value: str) -> str:
    if not value.strip():
        raise forms.ValidationError("Write a prompt.")
    return value


def add_contestant_fields(form: forms.Form, count: int) -> None:
    """contestant_1 .. contestant_<count>: enabled catalogue entries by slug, each optional."""
    for i in range(1, count + 1):
        form.fields[f"contestant_{i}"] = EntryChoiceField(
            queryset=ModelEntry.objects.enabled(), to_field_name="slug", required=False,
            label=f"Contestant {i}", empty_label="—",
            error_messages={"invalid_choice": "No enabled catalogue model has that slug."},
        )


class ParamsMixin(forms.Form):
    """The shared sampling parameters: only what the user set, checked as the workers will and,
    where `blind_who` names the thing, as a blind match needs (no seed, no near-greedy sampling:
    `blind_params_problem`). A form whose answers are not judged blind sets it to ""."""

    blind_who = "A tournament"
    extra_params: dict | None = None

    def _add_param_fields(self):
        blind = bool(self.blind_who)
        self.fields["temperature"] = forms.FloatField(
            required=False, min_value=BLIND_MIN_TEMPERATURE if blind else LIMITS["temperature"][0],
            max_value=LIMITS["temperature"][1])
        self.fields["temperature"].widget.attrs["step"] = "0.05"
        self.fields["top_p"] = forms.FloatField(required=False,
                                                min_value=BLIND_MIN_TOP_P if blind else LIMITS["top_p"][0],
                                                max_value=LIMITS["top_p"][1])
        self.fields["top_p"].widget.attrs["step"] = "0.01"
        self.fields["max_new_tokens"] = forms.IntegerField(
            required=False, min_value=int(LIMITS["max_new_tokens"][0]), max_value=int(LIMITS["max_new_tokens"][1]),
            help_text=LIMIT_HELP.format(n=fair.token_limit()))

    def param_fields(self):
        return [self[name] for name in PARAM_FIELDS]

    def _params(self, cleaned: dict) -> dict:
        params = {name: cleaned.get(name) for name in PARAM_FIELDS if cleaned.get(name) is not None}
        params.update(constraint(cleaned))
        params.update(self.extra_params or {})
        try:
            SamplingParams.from_dict(params)
        except ParamError as exc:
            for name, message in exc.errors.items():
                self.add_error(None, f"{name}: {message}")
        if self.blind_who and (problem := blind_params_problem(params, self.blind_who)):
            self.add_error(None, problem)
        return params


class TournamentForm(ParamsMixin):
    """4 or 8 contestants in seed order (the order counts when seeding is "given"), a prompt
    and shared parameters. The page and the API share it."""

    seeding = forms.ChoiceField(choices=Tournament.Seeding.choices, initial=Tournament.Seeding.RANDOM,
                                widget=forms.RadioSelect)
    prompt = _prompt_field()
    system_prompt = forms.CharField(label="System prompt (empty: each contestant's own)", required=False,
                                    strip=False, widget=forms.Textarea(attrs={"rows": 2}))
    tag = TagField()

    def __init__(self, *args, extra_params: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.extra_params = extra_params  # the API's whole params object (stop sequences too)
        _limit_size(self, "prompt", "system_prompt")
        add_contestant_fields(self, MAX_CONTESTANTS)
        self._add_param_fields()
        add_constraint_fields(self)
        self.fields["temperature"].initial = 0.7
        self.fields["max_new_tokens"].initial = 128

    def contestant_fields(self):
        return [self[f"contestant_{i}"] for i in range(1, MAX_CONTESTANTS + 1)]

    def clean_prompt(self):
        return _clean_prompt(self.cleaned_data["prompt"])

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        picked = [m for i in range(1, MAX_CONTESTANTS + 1) if (m := cleaned.get(f"contestant_{i}")) is not None]
        if any(f.startswith("contestant_") for f in self.errors):
            return cleaned
        if len(picked) not in bracket.SIZES:
            self.add_error(None, f"Pick 4 or 8 contestants (you picked {len(picked)}).")
        elif len({m.id for m in picked}) != len(picked):
            self.add_error(None, "Each contestant may appear only once.")
        cleaned["contestants"] = picked
        cleaned["params"] = params = self._params(cleaned)
        for model in picked:  # a regex where a contestant's engine cannot enforce one
            if problem := engine_problem(model.engine, params.get("json_schema"), params.get("regex")):
                self.add_error(None, f"{model.name}: {problem}")
        return cleaned


class ReplayForm(ParamsMixin):
    """The same contestants and seeding on another prompt; parameters as before unless set."""

    prompt = _prompt_field("Another prompt")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _limit_size(self, "prompt")
        self.extra_params = None
        self._add_param_fields()

    def clean_prompt(self):
        return _clean_prompt(self.cleaned_data["prompt"])

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        cleaned["params"] = self._params(cleaned)
        return cleaned


class WinnerForm(NoteFields):
    """The winner of a match, with the verdict's optional reasons and comment."""

    match = forms.IntegerField()
    battle = forms.UUIDField(required=False)
    winner = forms.ChoiceField(choices=[("left", "Model A"), ("right", "Model B")],
                               error_messages={"invalid_choice": "A knockout needs a winner: left or right."})


class MatchForm(forms.Form):
    match = forms.IntegerField()
