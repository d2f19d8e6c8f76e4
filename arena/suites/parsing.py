"""A prompt suite's prompts as data: one prompt object checked, a JSONL, CSV or YAML file parsed.

No request here, and no database but one look-up: a rubric check's judges must be catalogue
entries (`_judge_problems`). The upload form, the create page, the API and the tests
all go through `check_items`, so a prompt is judged the same way however it arrives. Each
problem names where it is ("line 7: 'prompt' is missing", "prompts[2]: ...") and every
problem is reported (up to MAX_PROBLEMS), so a user fixes a file in one go; a file with
any problem saves nothing (the caller raises before creating the suite).

A prompt object: {"prompt", "system_prompt", "reference", "json_schema", "regex", "checks",
"tags"}, all but "prompt" optional (null or "" count as absent). "checks": a list of check specs
(arena.suites.checks) each answer to the prompt gets; a bad one is named by its index ("line 7:
checks: check 1: regex: not a valid regex: ..."); "tags" a list of prompt tags. In a CSV file the
header row names these columns; the json_schema and checks cells hold JSON text, the tags cell
the tags separated by commas. A YAML file (arena/suites/yaml_format.py) also holds the suite's
name, tag and default checks, and may expand one prompt over a table of values.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from arena import jsonbody
from arena.catalogue.models import ModelEntry
from arena.generations import tags as prompt_tags
from inference import structured

from . import checks as answer_checks

FIELDS = ("prompt", "system_prompt", "reference", "json_schema", "regex", "checks")
MAX_PROMPTS = 500
MAX_PROBLEMS = 20  # then "... stopped": a wholly wrong file needs no thousand lines of errors
LIST_FIELDS = ("checks", "tags")  # a YAML export writes these as flow lists
COLUMNS = (*FIELDS, "tags")  # a JSONL object's keys, a CSV file's columns (tags: check_prompt's)
MAX_TAGS = 20  # a prompt's own tags


@dataclass(frozen=True)
class PromptSpec:
    """One checked prompt, ready to store as a SuitePrompt."""

    prompt: str
    system_prompt: str = ""
    reference: str = ""
    json_schema: dict | None = None
    regex: str = ""
    checks: list = field(default_factory=list)
    tags: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class SuiteFile:
    """A whole suite as a file gives it: the prompts, and what only a YAML file names: the
    suite's name, tag and default checks (each None where the file does not say: a JSONL or
    CSV file imported into a suite keeps the suite's default checks)."""

    prompts: list[PromptSpec]
    name: str | None = None
    tag: str | None = None
    default_checks: list[dict] | None = None


class SuiteError(ValueError):
    """Prompts that cannot be saved; `problems` lists each one, naming where it is."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


def max_prompt_chars() -> int:
    return settings.ARENA_MAX_PROMPT_CHARS  # the same limit as every other prompt of the app


def max_upload_bytes() -> int:
    """An upload is a request body: arena.generations.limits.BodySizeLimit refuses a larger one first."""
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


# --- one prompt object -----------------------------------------------------------------
def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _text(item: dict, name: str, problems: list[str], *, limit: int) -> str:
    value = item.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        problems.append(f"'{name}' must be a string, not {_json_type(value)}")
        return ""
    if len(value) > limit:
        problems.append(f"'{name}' is {len(value)} characters, at most {limit} allowed")
    return value


def _prompt(item: dict, problems: list[str]) -> str:
    if item.get("prompt") in (None, ""):
        problems.append("'prompt' is missing")
        return ""
    prompt = _text(item, "prompt", problems, limit=max_prompt_chars())
    if isinstance(item["prompt"], str) and not prompt.strip():
        problems.append("'prompt' is blank")
    return prompt


def _schema(item: dict, problems: list[str]) -> dict | None:
    value = item.get("json_schema")
    if value is not None and not isinstance(value, dict):
        problems.append(f"'json_schema' must be a JSON object (a JSON Schema), not {_json_type(value)}")
        return None
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:  # Python's json reads NaN and 1e400 (inf); PostgreSQL's jsonb stores neither
        problems.append("'json_schema' holds a number JSON cannot store (NaN or infinity)")
        return None
    except RecursionError:
        problems.append("'json_schema' is nested too deeply")
        return None
    return value


def _judge_problems(specs: Any) -> list[str]:
    """Each judge a rubric check names that is not an enabled catalogue entry ("check 2: rubric:
    ..."), looked up in the catalogue (one query, only when a rubric check names a judge)."""
    named = answer_checks.rubric_judges(specs)
    if not named:
        return []
    wanted = {judge for _, judges in named for judge in judges}
    entries = dict(ModelEntry.objects.filter(slug__in=wanted).values_list("slug", "enabled"))
    return [f"check {i}: rubric: the judge {judge!r} is "
            + ("not enabled in the catalogue" if judge in entries else
               "not a catalogue entry (name a judge by its catalogue slug)")
            for i, judges in named for judge in judges if not entries.get(judge)]


def _checks(item: dict, problems: list[str]) -> list:
    value = item.get("checks")
    found = answer_checks.problems(value) or _judge_problems(value)
    problems.extend(f"checks: {p}" for p in found)
    reference = item.get("reference")
    if not found and not (isinstance(reference, str) and reference.strip()):
        problems.extend(f"checks: check {i}: similar compares the answer with the prompt's reference: give the "
                        "prompt a 'reference'" for i in answer_checks.needs_reference(value))
    return [] if found else list(value or [])


def check_defaults(value: Any, prompts: list[PromptSpec]) -> list:
    """A suite's default checks (every prompt's answers get them), or SuiteError naming each bad
    one: "default_checks: check 0: ..."."""
    problems = [f"default_checks: {p}" for p in answer_checks.problems(value) or _judge_problems(value)]
    if unstorable := jsonbody.unstorable_text(value):
        problems.append(f"default_checks: {unstorable}")
    bare = next((n for n, p in enumerate(prompts, start=1) if not p.reference.strip()), None)
    if not problems and bare is not None:
        problems += [f"default_checks: check {i}: similar compares each answer with its prompt's reference, "
                     f"and prompt {bare} has none" for i in answer_checks.needs_reference(value)]
    if problems:
        raise SuiteError(problems[:MAX_PROBLEMS])
    return list(value or [])


def check_item(item: Any) -> tuple[PromptSpec | None, list[str]]:
    """One prompt object: the prompt, or every problem with it."""
    if not isinstance(item, dict):
        return None, [f"must be a JSON object with a 'prompt', not {_json_type(item)}"]
    problems: list[str] = []
    unknown = sorted(set(item) - set(FIELDS))
    if unknown:
        problems.append(f"unknown field(s) {', '.join(map(repr, unknown))} (known: {', '.join(COLUMNS)})")
    if unstorable := jsonbody.unstorable_text(item):
        problems.append(unstorable)
    prompt = _prompt(item, problems)
    system_prompt = _text(item, "system_prompt", problems, limit=max_prompt_chars())
    reference = _text(item, "reference", problems, limit=max_prompt_chars())
    regex = _text(item, "regex", problems, limit=structured.MAX_REGEX_CHARS)
    schema = _schema(item, problems)
    checks = _checks(item, problems)
    # the workers build their grammars from the same judgement
    if not problems and (problem := structured.constraint_problem(schema, regex or None)):
        problems.append(problem)
    if problems:
        return None, problems
    return PromptSpec(prompt, system_prompt, reference, schema, regex, checks), []


def check_tags(value: Any) -> tuple[list[str], list[str]]:
    """A prompt's own tags, each normalised as the forms store a tag; a repeated one kept once."""
    if value is None:
        return [], []
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        return [], ["'tags' must be a list of strings"]
    if any(len(t) > prompt_tags.MAX_LENGTH for t in value):  # as written, blanks included, as TagField
        return [], [f"'tags': a tag is {prompt_tags.SHAPE}"]
    try:
        found = list(dict.fromkeys(t for t in map(prompt_tags.normalise, value) if t))
    except ValidationError:
        return [], [f"'tags': a tag is {prompt_tags.SHAPE}"]
    if len(found) > MAX_TAGS:
        return [], [f"'tags' holds {len(found)} tags, at most {MAX_TAGS} allowed"]
    return found, []


def check_prompt(item: Any) -> tuple[PromptSpec | None, list[str]]:
    """A prompt object with its tags: check_item judges the rest (its checks included)."""
    if not isinstance(item, dict):
        return check_item(item)
    spec, problems = check_item({k: v for k, v in item.items() if k != "tags"})
    tags, found_tags = check_tags(item.get("tags"))
    problems = [*problems, *found_tags]
    if problems or spec is None:
        return None, problems
    return replace(spec, tags=tags), []


_UNREADABLE = object()  # an item that could not be read: check_items reports its `where`, the problem, alone


def check_items(items: Iterable[tuple[str, Any]]) -> list[PromptSpec]:
    """(where, item) pairs, e.g. ("line 7", {...}): the prompts, or SuiteError listing
    every problem as "<where>: <problem>". A line that could not be read comes as
    ("line 3 is not valid JSON: ...", _UNREADABLE) and is reported as is."""
    specs: list[PromptSpec] = []
    problems: list[str] = []
    for count, (where, item) in enumerate(items, start=1):
        if count > MAX_PROMPTS:
            problems.append(f"{where}: a suite holds at most {MAX_PROMPTS} prompts")
            break
        if item is _UNREADABLE:
            problems.append(where)
        else:
            spec, found = check_prompt(item)
            problems.extend(f"{where}: {p}" for p in found)
            if spec:
                specs.append(spec)
        if len(problems) > MAX_PROBLEMS:
            problems = [*problems[:MAX_PROBLEMS], f"stopped after {MAX_PROBLEMS} problems"]
            break
    if not problems and not specs:
        problems.append("there are no prompts: a suite holds at least one")
    if problems:
        raise SuiteError(problems)
    return specs


def api_items(prompts: Any) -> list[PromptSpec]:
    """The API body's "prompts" list, each item named by its index."""
    if not isinstance(prompts, list) or not prompts:
        raise SuiteError([f"prompts must be a list of 1 to {MAX_PROMPTS} prompt objects"])
    return check_items((f"prompts[{i}]", item) for i, item in enumerate(prompts))


# --- files -----------------------------------------------------------------------------
def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise SuiteError([f"line {line}: the file is not UTF-8 text ({exc.reason})"]) from None


def _jsonl_items(text: str) -> Iterator[tuple[str, Any]]:
    # split on "\n" only: str.splitlines would also cut at U+2028 and others, legal inside a JSON string
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {number}", jsonbody.parse(line, f"line {number}")
        except ValueError as exc:  # "line 3 is not valid JSON: ..."
            yield str(exc), _UNREADABLE


def parse_jsonl(data: bytes) -> list[PromptSpec]:
    """One JSON prompt object a line; blank lines skipped."""
    return check_items(_jsonl_items(decode(data)))


def _csv_header(row: list[str], where: str) -> list[str]:
    columns = [c.strip().lower() for c in row]
    problems = []
    if unknown := [c for c in columns if c not in COLUMNS]:
        problems.append(f"unknown column(s) {', '.join(map(repr, unknown))} (known: {', '.join(COLUMNS)})")
    if "prompt" not in columns:
        problems.append("the header row has no 'prompt' column")
    if len(set(columns)) != len(columns):
        problems.append("a column is named twice")
    if problems:
        raise SuiteError([f"{where}: {p}" for p in problems])
    return columns


CSV_JSON_COLUMNS = ("json_schema", "checks")  # their cells hold JSON text
TAG_SEPARATOR = ","


def _csv_cell(column: str, cell: str) -> Any:
    """A cell's value: JSON for json_schema and checks (ValueError naming it), a list for tags, else the text."""
    if column in CSV_JSON_COLUMNS:
        return jsonbody.parse(cell, column)
    if column == "tags":
        return [tag.strip() for tag in cell.split(TAG_SEPARATOR) if tag.strip()]
    return cell


def _csv_row(columns: list[str], row: list[str], where: str) -> tuple[str, Any]:
    if len(row) > len(columns):
        return f"{where}: {len(row)} cells, but the header names {len(columns)} columns", _UNREADABLE
    try:
        return where, {col: _csv_cell(col, cell) for col, cell in zip(columns, row, strict=False) if cell != ""}
    except ValueError as exc:
        return f"{where}: {exc}", _UNREADABLE


def _csv_items(text: str) -> Iterator[tuple[str, Any]]:
    # strict: a stray quote is an error to report, not a cell silently read another way
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    columns, start = None, 1
    try:
        for row in reader:  # a quoted cell may span lines: a row is named by its first line
            if any(cell.strip() for cell in row):
                if columns is None:
                    columns = _csv_header(row, f"line {start}")
                else:
                    yield _csv_row(columns, row, f"line {start}")
            start = reader.line_num + 1
    except csv.Error as exc:
        yield f"line {start}: not valid CSV: {exc}", _UNREADABLE


def parse_csv(data: bytes) -> list[PromptSpec]:
    """A header row naming the columns, then one prompt a row."""
    return check_items(_csv_items(decode(data)))


# --- the create page's text --------------------------------------------------------------
SEPARATOR = "---"


def parse_blocks(text: str) -> list[PromptSpec]:
    """Prompts typed in one text box, separated by lines holding only SEPARATOR; each
    named by its number ("prompt 3: ..."). Blank blocks (a trailing separator) are skipped."""
    blocks: list[str] = []
    current: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.strip() == SEPARATOR:
            blocks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    blocks.append("\n".join(current))
    prompts = [block.strip("\n") for block in blocks if block.strip()]
    return check_items((f"prompt {i}", {"prompt": p}) for i, p in enumerate(prompts, start=1))
