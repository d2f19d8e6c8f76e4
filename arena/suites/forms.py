"""The suite forms: a name and a tag (shared by the pages and the API), with the prompts
typed in one text box or uploaded as a file; a file imported again as a suite's new version.
The prompts are checked by arena.suites.parsing."""

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


def _prompts_or_errors(parse, *args):
    try:
        return parse(*args)
    except parsing.SuiteError as exc:
        raise forms.ValidationError(exc.problems) from None


def read_upload(upload) -> parsing.SuiteFile:
    """An uploaded file's suite, or ValidationError naming every problem."""
    data = upload.read(parsing.max_upload_bytes() + 1)  # enough to tell it is too large
    return _prompts_or_errors(files.parse_file, upload.name, data)


class TypedSuiteForm(SuiteForm):
    prompts = forms.CharField(
        strip=False, widget=forms.Textarea(attrs={"rows": 14}),
        help_text=f"One prompt per block: separate prompts with a line holding only {parsing.SEPARATOR}. "
                  f"Up to {parsing.MAX_PROMPTS} prompts.")

    def clean_prompts(self):
        return _prompts_or_errors(parsing.parse_blocks, self.cleaned_data["prompts"])


class UploadSuiteForm(SuiteForm):
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
        return data


class ImportVersionForm(forms.Form):
    """A suite's file again, as its new version (the suite kept as a file in a repository)."""

    file = forms.FileField(help_text=FILE_HELP)

    def clean_file(self):
        return read_upload(self.cleaned_data["file"])
