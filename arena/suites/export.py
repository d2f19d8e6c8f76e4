"""A suite's current version as a file: YAML (the whole suite: name, tag, default checks and
prompts), JSONL or CSV (the prompts, with their checks and tags; the suite's default checks
have no place there). Each reads back, through arena.suites.parsing, to the same suite: a
suite's file can be kept in a repository and imported again. A YAML file written with
variables comes back with them filled: one prompt written out per row."""

from __future__ import annotations

import csv
import io
import json

from django.utils import timezone
from django.utils.text import slugify

from . import yaml_format
from .actions import current_file
from .models import Suite
from .parsing import COLUMNS, CSV_JSON_COLUMNS, TAG_SEPARATOR, PromptSpec, SuiteFile

FORMATS = ("yaml", "jsonl", "csv")
CONTENT_TYPES = {"yaml": "application/yaml; charset=utf-8", "jsonl": "application/jsonl; charset=utf-8",
                 "csv": "text/csv; charset=utf-8"}


def render(suite: Suite, fmt: str) -> tuple[str, str]:
    """The file's text and its content type."""
    return write(current_file(suite), fmt), CONTENT_TYPES[fmt]


def write(suite_file: SuiteFile, fmt: str) -> str:
    if fmt == "yaml":
        return yaml_format.dump(suite_file)
    return to_jsonl(suite_file.prompts) if fmt == "jsonl" else to_csv(suite_file.prompts)


def filename(suite: Suite, fmt: str) -> str:
    name = slugify(suite.name)[:60] or "suite"
    return f"{name}-v{suite.version}-{timezone.localdate().isoformat()}.{fmt}"


def _fields(spec: PromptSpec) -> dict:
    """The prompt's fields that hold something (an absent one reads back as empty)."""
    return {k: v for k, v in spec.as_dict().items() if v not in ("", None, [])}


def to_jsonl(prompts: list[PromptSpec]) -> str:
    # json.dumps escapes every line break a JSON string holds, so one prompt stays one line
    return "".join(json.dumps(_fields(spec), ensure_ascii=False) + "\n" for spec in prompts)


def to_csv(prompts: list[PromptSpec]) -> str:
    """A header of the columns some prompt uses, then a row a prompt."""
    rows = [_fields(spec) for spec in prompts]
    columns = [c for c in COLUMNS if c == "prompt" or any(c in row for row in rows)]
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(column, row.get(column)) for column in columns])
    return out.getvalue()


def _cell(column: str, value) -> str:
    if value is None:
        return ""
    if column in CSV_JSON_COLUMNS:
        return json.dumps(value, ensure_ascii=False)
    if column == "tags":
        return f"{TAG_SEPARATOR} ".join(value)
    return value
