"""The suite forms: a name and a tag (shared by the pages and the API), with the prompts
typed in one text box or uploaded as a file, and the checks every answer gets (JSON, on the
pages). The prompts and checks are checked by arena.suites.parsing."""

import json

from django import forms

from arena.generations.tags import TagField

from . import parsing
from .models import NAME_MAX_LENGTH


class SuiteForm(forms.Form):
    name = forms.CharField(max_length=NAME_MAX_LENGTH, strip=False,
                           widget=forms.TextInput(attrs={"placeholder": "e.g. Support replies, French"}))
    tag = TagField()

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the suite a name.")
        return name


class DefaultChecksMixin(forms.Form):
    """The suite's default checks, typed as a JSON list of check specs (arena.suites.checks)."""

    default_checks = forms.CharField(
        required=False, strip=True, widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false", "placeholder":
                                                                '[{"type": "words", "max": 150}, '
                                                                '{"type": "ttft", "max": 1.0}]'}),
        label="Checks of every answer",
        help_text='Optional: a JSON list of checks every answer gets, e.g. {"type": "contains", "value": '
                  '"refund", "ignore_case": true}. The types are listed in the suites guide.')

    def clean_default_checks(self):
        text = self.cleaned_data["default_checks"]
        if not text:
            return []
        try:
            return json.loads(text)
        except ValueError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc}") from None

    def checked_defaults(self, prompts_field: str) -> None:
        """Refuse the default checks (on their field) that are not checks, or that compare with
        a reference a prompt lacks; called from clean() once the prompts are read."""
        prompts = self.cleaned_data.get(prompts_field)
        if "default_checks" not in self.cleaned_data or prompts is None:
            return
        try:
            self.cleaned_data["default_checks"] = parsing.check_defaults(self.cleaned_data["default_checks"], prompts)
        except parsing.SuiteError as exc:
            self.add_error("default_checks", exc.problems)


def _prompts_or_errors(parse, *args) -> list[parsing.PromptSpec]:
    try:
        return parse(*args)
    except parsing.SuiteError as exc:
        raise forms.ValidationError(exc.problems) from None


class TypedSuiteForm(DefaultChecksMixin, SuiteForm):
    prompts = forms.CharField(
        strip=False, widget=forms.Textarea(attrs={"rows": 14}),
        help_text=f"One prompt per block: separate prompts with a line holding only {parsing.SEPARATOR}. "
                  f"Up to {parsing.MAX_PROMPTS} prompts.")

    def clean_prompts(self):
        return _prompts_or_errors(parsing.parse_blocks, self.cleaned_data["prompts"])

    def clean(self):
        self.checked_defaults("prompts")
        return self.cleaned_data


class UploadSuiteForm(DefaultChecksMixin, SuiteForm):
    file = forms.FileField(help_text="A .jsonl file (one JSON object a line) or a .csv file (a header row first).")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        data = upload.read(parsing.max_upload_bytes() + 1)  # enough to tell it is too large
        return _prompts_or_errors(parsing.parse_file, upload.name, data)

    def clean(self):
        self.checked_defaults("file")
        return self.cleaned_data
