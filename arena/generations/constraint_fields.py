"""The structured-output fields every form that starts generations shares: an optional JSON
schema or regex that constrains decoding (inference.structured), refused with a clear message
before anything is queued."""

import json

from django import forms

from inference.structured import regex_problem, schema_problem

NAMES = ("json_schema", "regex")


class JSONSchemaField(forms.CharField):
    """A JSON schema written as text, cleaned to the schema (a dict), or None when empty."""

    widget = forms.Textarea(attrs={"rows": 3, "spellcheck": "false"})

    def to_python(self, value):
        text = super().to_python(value)
        if not text:
            return None
        try:
            schema = json.loads(text)
        except ValueError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc}.") from exc
        if problem := schema_problem(schema):
            raise forms.ValidationError(problem)
        return schema


class RegexField(forms.CharField):
    """A regex the whole answer must match, or None when empty."""

    def to_python(self, value):
        regex = super().to_python(value)
        if not regex:
            return None
        if problem := regex_problem(regex):
            raise forms.ValidationError(problem)
        return regex


def add_constraint_fields(form: forms.Form) -> None:
    form.fields["json_schema"] = JSONSchemaField(
        label="JSON schema", required=False,
        help_text="Optional: the answer is constrained to JSON valid for this schema, and checked against it.")
    form.fields["regex"] = RegexField(
        label="Regex", required=False, strip=False,
        help_text="Optional, instead of a schema: the whole answer is constrained to match it.")


def constraint(cleaned: dict) -> dict:
    """The constraint among a form's cleaned data, as params: {} when none was given."""
    return {name: cleaned[name] for name in NAMES if cleaned.get(name) is not None}
