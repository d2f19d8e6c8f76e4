"""The forms of suite runs: a new run (the tournament form's contestant and parameter fields,
arena.tournaments.forms) and a person's blind vote on a pair.

A vote's pair and the order it was shown in travel in a signed token the server made when it
showed the pair: the client cannot say which answer was "A", only which label it prefers."""

from __future__ import annotations

from django import forms
from django.core import signing

from arena.battles.forms import NoteFields
from arena.catalogue.models import ModelEntry
from arena.suites.models import Suite
from arena.tournaments.forms import ParamsMixin, add_contestant_fields

from . import judge as judging  # `judge` is a field's name below
from .judge_checks import known_judges
from .models import SuiteRun

SALT = "arena.suites.blind-pair"


class SuiteRunForm(ParamsMixin, forms.Form):
    """A suite of the user's, 1 to 16 contestants in order, a format (an adaptive run's budget),
    an optional judge (or a jury of up to three: `judges`) and its template, and shared parameters
    (arena.suite_runs.actions.start_run checks the rest)."""

    blind_who = ""  # a model judge may want greedy answers; people see the names on the run page anyway
    suite = forms.ModelChoiceField(queryset=Suite.objects.none(), empty_label=None)
    format = forms.ChoiceField(choices=SuiteRun.Format.choices, initial=SuiteRun.Format.ROUND_ROBIN,
                               widget=forms.RadioSelect)
    judge = forms.ModelChoiceField(queryset=ModelEntry.objects.enabled(), to_field_name="slug", required=False,
                                   empty_label="People judge", label="Judge",
                                   error_messages={"invalid_choice": "No enabled catalogue model has that slug."})
    judge_2 = forms.ModelChoiceField(queryset=ModelEntry.objects.enabled(), to_field_name="slug", required=False,
                                     empty_label="None", label="Second judge",
                                     error_messages={"invalid_choice": "No enabled catalogue model has that slug."})
    judge_3 = forms.ModelChoiceField(queryset=ModelEntry.objects.enabled(), to_field_name="slug", required=False,
                                     empty_label="None", label="Third judge",
                                     error_messages={"invalid_choice": "No enabled catalogue model has that slug."})
    budget = forms.IntegerField(
        required=False, min_value=2, label="Budget (adaptive)",
        help_text="Judge calls at most, each pair read twice; empty: half of a round robin's.")
    reuse_answers = forms.BooleanField(
        required=False, initial=False, label="Reuse earlier answers",
        help_text="An answer to the same greedy or seeded request (same model and version, prompt and parameters) "
                  "in an earlier run of yours is reused, not generated again, and marked cached.")
    judge_template = forms.CharField(
        required=False, strip=False, initial=judging.DEFAULT_TEMPLATE, label="Judge template",
        max_length=judging.MAX_TEMPLATE_CHARS, widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}))

    def __init__(self, *args, owner, **kwargs):
        super().__init__(*args, **kwargs)
        suite = self.fields["suite"]
        assert isinstance(suite, forms.ModelChoiceField)  # as declared above
        suite.queryset = Suite.objects.filter(owner=owner)
        add_contestant_fields(self, SuiteRun.MAX_CONTESTANTS)
        self._add_param_fields()

    def known_judges(self) -> list[dict]:
        """What is known of each enabled entry as a judge before it is chosen: its figures over its
        runs and quick checks, or none yet (arena.suite_runs.judge_checks.known_judges)."""
        judge = self.fields["judge"]
        assert isinstance(judge, forms.ModelChoiceField)  # as declared above
        return known_judges(list(judge.queryset or ()))

    def contestant_fields(self):
        return [self[f"contestant_{i}"] for i in range(1, SuiteRun.MAX_CONTESTANTS + 1)]

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        picked = [cleaned.get(f"contestant_{i}") for i in range(1, SuiteRun.MAX_CONTESTANTS + 1)]
        cleaned["contestants"] = [m for m in picked if m is not None]
        cleaned["params"] = self._params(cleaned)
        jury = [cleaned.get(name) for name in ("judge", "judge_2", "judge_3")]
        if cleaned.get("judge") is None and any(jury):
            self.add_error("judge", "Name the first judge before a second or third.")
        cleaned["judges"] = [m for m in jury if m is not None]
        return cleaned


def pair_token(run: SuiteRun, left_id, right_id, a_side: str) -> str:
    """A signed note of the pair shown and which of its sides was labelled "A"."""
    return signing.dumps({"run": str(run.id), "left": str(left_id), "right": str(right_id), "a": a_side}, salt=SALT)


class VoteForm(NoteFields):
    """A's or B's win, a tie or both bad, on the pair the token names, with the verdict's optional
    reasons and comment (`note`, shown once the rater's names are revealed)."""

    CHOICES = {"a": None, "b": None, "tie": "tie", "both_bad": "both_bad"}
    token = forms.CharField()
    choice = forms.ChoiceField(choices=[(c, c) for c in CHOICES])

    def __init__(self, *args, run: SuiteRun, **kwargs):
        super().__init__(*args, team=run.team, **kwargs)
        self.run = run

    def clean_token(self) -> dict:
        try:
            shown = signing.loads(self.cleaned_data["token"], salt=SALT)
        except signing.BadSignature:
            raise forms.ValidationError("That pair was not shown by this page.") from None
        if shown.get("run") != str(self.run.id) or shown.get("a") not in ("left", "right"):
            raise forms.ValidationError("That pair was not shown by this page.")
        return shown

    def verdict(self) -> tuple[str, str, str]:
        """(left generation id, right generation id, outcome in the pair's left/right terms)."""
        shown, choice = self.cleaned_data["token"], self.cleaned_data["choice"]
        outcome = self.CHOICES[choice]
        if outcome is None:  # "a" or "b": whichever side carried that label
            b_side = "right" if shown["a"] == "left" else "left"
            outcome = shown["a"] if choice == "a" else b_side
        return shown["left"], shown["right"], outcome
