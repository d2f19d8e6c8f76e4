"""The suite forms: a name and a tag (shared by the pages and the API), with the prompts
typed in one text box or uploaded as a file. The prompts are checked by arena.suites.parsing."""

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


def _prompts_or_errors(parse, *args) -> list[parsing.PromptSpec]:
    try:
        return parse(*args)
    except parsing.SuiteError as exc:
        raise forms.ValidationError(exc.problems) from None


class TypedSuiteForm(SuiteForm):
    prompts = forms.CharField(
        strip=False, widget=forms.Textarea(attrs={"rows": 14}),
        help_text=f"One prompt per block: separate prompts with a line holding only {parsing.SEPARATOR}. "
                  f"Up to {parsing.MAX_PROMPTS} prompts.")

    def clean_prompts(self):
        return _prompts_or_errors(parsing.parse_blocks, self.cleaned_data["prompts"])


class UploadSuiteForm(SuiteForm):
    file = forms.FileField(help_text="A .jsonl file (one JSON object a line) or a .csv file (a header row first).")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        data = upload.read(parsing.max_upload_bytes() + 1)  # enough to tell it is too large
        return _prompts_or_errors(parsing.parse_file, upload.name, data)
