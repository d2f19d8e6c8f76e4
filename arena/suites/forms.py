"""The suite forms: a name and a tag (shared by the pages and the API), with the prompts
typed in one text box or uploaded as a file (a file imported again as a suite's new version),
and the checks every answer gets (JSON, on the pages). The prompts and checks are checked by
arena.suites.parsing."""

import json

from django import forms

from arena.generations.tags import TagField

from . import files, parsing
from .models import NAME_MAX_LENGTH

FILE_HELP = ("A .yaml file (name, defaults, variables, checks: see the format below), a .jsonl file (one JSON "
             "object a line) or a .csv file (a header row first).")


class SuiteForm(forms.Form):
    name = forms.CharField(max_length=NAME_MAX_LENGTH, strip=False,
                           widget=forms.TextInput(attrs={"placeholder": "e.g. Support replies, French"}))
    tag = TagField()

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if not name and self.fields["name"].required:
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

    def checked_defaults(self, prompts: list[parsing.PromptSpec] | None) -> None:
        """Refuse the default checks (on their field) that are not checks, or that compare with
        a reference a prompt lacks; called from clean() once the prompts are read."""
        if "default_checks" not in self.cleaned_data or prompts is None:
            return
        try:
            self.cleaned_data["default_checks"] = parsing.check_defaults(self.cleaned_data["default_checks"], prompts)
        except parsing.SuiteError as exc:
            self.add_error("default_checks", exc.problems)


def _prompts_or_errors(parse, *args):
    try:
        return parse(*args)
    except parsing.SuiteError as exc:
        raise forms.ValidationError(exc.problems) from None


def read_upload(upload) -> parsing.SuiteFile:
    """An uploaded file's suite, or ValidationError naming every problem."""
    data = upload.read(parsing.max_upload_bytes() + 1)  # enough to tell it is too large
    return _prompts_or_errors(files.parse_file, upload.name, data)


class TypedSuiteForm(DefaultChecksMixin, SuiteForm):
    prompts = forms.CharField(
        strip=False, widget=forms.Textarea(attrs={"rows": 14}),
        help_text=f"One prompt per block: separate prompts with a line holding only {parsing.SEPARATOR}. "
                  f"Up to {parsing.MAX_PROMPTS} prompts.")

    def clean_prompts(self):
        return _prompts_or_errors(parsing.parse_blocks, self.cleaned_data["prompts"])

    def clean(self):
        self.checked_defaults(self.cleaned_data.get("prompts"))
        return self.cleaned_data


class UploadSuiteForm(DefaultChecksMixin, SuiteForm):
    """A file; the name and tag typed here, else those a YAML file gives."""

    file = forms.FileField(help_text=FILE_HELP)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["name"].required = False
        self.fields["name"].help_text = "Empty: the name the YAML file gives."

    def clean_file(self):
        return read_upload(self.cleaned_data["file"])

    def clean(self):
        data = super().clean() or {}
        suite_file = data.get("file")
        if suite_file is not None:
            data["name"] = data.get("name") or suite_file.name
            data["tag"] = data.get("tag") or suite_file.tag or ""
            if not data["name"]:
                self.add_error("name", "Give the suite a name (here, or as 'name' in a YAML file).")
            if not data.get("default_checks") and suite_file.default_checks:
                data["default_checks"] = suite_file.default_checks  # a YAML file's own
        self.checked_defaults(suite_file.prompts if suite_file is not None else None)
        return data


class ImportVersionForm(forms.Form):
    """A suite's file again, as its new version (the suite kept as a file in a repository)."""

    file = forms.FileField(help_text=FILE_HELP)

    def clean_file(self):
        return read_upload(self.cleaned_data["file"])
