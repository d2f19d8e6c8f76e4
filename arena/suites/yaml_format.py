"""Suite files in YAML: read (with variables) and written (by the export), data only.

A file (docs/suites.md, "Suite files"):

    name: Support replies            # optional: the suite's name and tag
    tag: support
    defaults:                        # optional
      system_prompt: You are a support agent.   # for each prompt without its own
      checks: [{type: words, max: 150}]         # the suite's default checks
    vars:                            # optional: a table for every prompt that uses {{...}} without vars of its own
      - {item: shoes, days: 20}
    prompts:
      - prompt: "Can I return {{item}} after {{days}} days?"
        vars: [{item: shoes, days: 20}, {item: a laptop, days: 40}]   # one prompt per row
        checks: [{type: contains, value: refund}]
        tags: [returns]
      - Say hello.                   # a prompt with nothing but its text

Variables are `{{name}}` and nothing else (no filters, loops or expressions). They are filled
in the prompt, its system prompt, its reference and the strings of its checks, one prompt per
row of the table that applies: the prompt's own `vars`, else the file's `vars` if the prompt
uses a variable. Every variable a prompt uses must have a value in every row; a prompt's own
row may give no value it does not use (a misspelt name); two rows that make the same prompt are
refused (a table the prompt only partly uses). A prompt with `template: false` is taken as
written, braces and all (the export writes it on a prompt whose text holds `{{name}}`).

Read with PyYAML's safe loader: no tag constructs an object, and aliases (`*name`), which could
multiply a small file into a huge one, are refused. Every problem names its line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml
from django.core.exceptions import ValidationError

from arena.generations import tags as prompt_tags

from . import parsing
from .models import NAME_MAX_LENGTH
from .parsing import PromptSpec, SuiteError, SuiteFile

TOP_KEYS = ("name", "tag", "defaults", "vars", "prompts")
DEFAULT_KEYS = ("system_prompt", "checks")
PROMPT_KEYS = (*parsing.COLUMNS, "vars", "template")
TEMPLATED = ("prompt", "system_prompt", "reference", "checks")  # where variables are filled
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")

Path = tuple[Any, ...]  # ("prompts", 2, "vars", 0): where a value is in the document


# --- reading ----------------------------------------------------------------------------
class _Document:
    """The parsed file: its data, and the line and column of each key and item (by path)."""

    def __init__(self, text: str):
        self.marks: dict[Path, yaml.Mark] = {}
        self.raw: dict[Path, str] = {}  # a scalar's text as written: a variable's 9.90 stays "9.90"
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                raise SuiteError(["the file is empty: a suite file is a mapping with 'prompts'"])
            self._walk(node, (), set())
            self.data = loader.construct_document(node)
        except yaml.MarkedYAMLError as exc:
            raise SuiteError([_yaml_problem(exc)]) from None
        except yaml.YAMLError as exc:
            raise SuiteError([f"not valid YAML: {exc}"]) from None
        except RecursionError:  # the loader recurses into each nested list or mapping
            raise SuiteError(["the file is nested too deeply"]) from None
        finally:
            loader.dispose()

    def _walk(self, node: yaml.Node, path: Path, seen: set[int]) -> None:
        # compose() resolves an alias to the node it names: a node met twice is an alias
        if id(node) in seen:
            raise SuiteError([(f"{where(node.start_mark)}: aliases (*name) are not allowed in a suite file: write "
                              "the value out (shared checks go in 'defaults')")])
        seen.add(id(node))
        self.marks[path] = node.start_mark
        if isinstance(node, yaml.ScalarNode):
            self.raw[path] = node.value
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self._walk(item, (*path, index), seen)
        elif isinstance(node, yaml.MappingNode):
            keys: set[str] = set()
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else repr(key)
                if name in keys:
                    raise SuiteError([f"{where(key.start_mark)}: the key '{name}' is given twice"])
                keys.add(name)
                self._walk(value, (*path, name), seen)
                self.marks[(*path, name)] = key.start_mark  # a key's problem points at the key

    def at(self, path: Path) -> str:
        """"line 7, column 5" of the value at `path` (the nearest enclosing one found)."""
        while path not in self.marks and path:
            path = path[:-1]
        return where(self.marks[path]) if path in self.marks else "the file"


def where(mark: yaml.Mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    place = f"{where(mark)}: " if mark else ""
    if isinstance(exc, yaml.constructor.ConstructorError):
        return (f"{place}{exc.problem}: a suite file holds plain text, numbers, lists and mappings, "
                "no tags that construct objects")
    return f"{place}not valid YAML: {exc.problem or exc.context}"


def load(text: str) -> SuiteFile:
    """A YAML suite file's suite; SuiteError naming every problem (with its line)."""
    doc = _Document(text)
    top = doc.data
    if not isinstance(top, dict):
        raise SuiteError([(f"{doc.at(())}: a suite file is a mapping with 'prompts' (and optionally name, tag, "
                          "defaults, vars)")])
    problems = _unknown(doc, (), top, TOP_KEYS, "the file")
    name, tag = _string(doc, top, "name", problems), _string(doc, top, "tag", problems)
    defaults = _defaults(doc, top.get("defaults"), problems)
    file_vars = _tables(doc, ("vars",), top.get("vars"), problems)
    prompts = top.get("prompts")
    if not isinstance(prompts, list) or not prompts:
        problems.append(f"{doc.at(('prompts',))}: 'prompts' must be a list of 1 to {parsing.MAX_PROMPTS} prompts")
        raise SuiteError(problems)
    file_used: set[str] = set()  # the variables the prompts filled from the file's vars use
    items = list(_items(doc, prompts, defaults, (file_vars, file_used), problems))
    if file_vars and not problems and (unused := sorted(set().union(*file_vars) - file_used)):
        problems.append(f"{doc.at(('vars',))}: 'vars' gives {_names(unused)}, which no prompt without vars "
                        "of its own uses")
    if problems:
        raise SuiteError(problems[:parsing.MAX_PROBLEMS])
    specs = parsing.check_items(items)
    # no default checks in the file: none (the file is the whole suite)
    return SuiteFile(specs, name=name, tag=tag, default_checks=parsing.check_defaults(defaults.get("checks"), specs))


def _unknown(doc: _Document, path: Path, mapping: dict, known: tuple, what: str) -> list[str]:
    return [f"{doc.at((*path, key))}: unknown key {key!r} in {what} (known: {', '.join(known)})"
            for key in mapping if key not in known]


def _string(doc: _Document, top: dict, key: str, problems: list[str]) -> str | None:
    """The suite's name or tag as the forms keep them (a name trimmed, a tag normalised)."""
    value = top.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        problems.append(f"{doc.at((key,))}: '{key}' must be text")
        return None
    if key == "tag":
        try:
            return prompt_tags.normalise(value)
        except ValidationError:
            problems.append(f"{doc.at((key,))}: a tag is {prompt_tags.SHAPE}")
            return None
    if not value.strip() or len(value.strip()) > NAME_MAX_LENGTH:
        problems.append(f"{doc.at((key,))}: a name is 1 to {NAME_MAX_LENGTH} characters, not blank")
        return None
    return value.strip()


def _defaults(doc: _Document, value: Any, problems: list[str]) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(f"{doc.at(('defaults',))}: 'defaults' must be a mapping ({', '.join(DEFAULT_KEYS)})")
        return {}
    problems += _unknown(doc, ("defaults",), value, DEFAULT_KEYS, "defaults")
    system_prompt = value.get("system_prompt")
    if system_prompt is not None and not isinstance(system_prompt, str):
        problems.append(f"{doc.at(('defaults', 'system_prompt'))}: 'system_prompt' must be text")
    return {"system_prompt": system_prompt or "", "checks": value.get("checks")}  # checked with the prompts


def _tables(doc: _Document, path: Path, value: Any, problems: list[str]) -> list[dict[str, str]] | None:
    """A `vars` value: one table (a mapping) or a list of them, each value as text."""
    if value is None:
        return None
    rows = [value] if isinstance(value, dict) else value
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        problems.append(f"{doc.at(path)}: 'vars' must be a mapping of names to values, or a list of them")
        return None
    many = not isinstance(value, dict)
    tables = []
    for index, row in enumerate(rows):
        row_path = (*path, index) if many else path
        tables.append({str(k): _var_text(doc, (*row_path, k), v, problems) for k, v in row.items()})
        if bad := [k for k in row if not isinstance(k, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)]:
            problems.append(f"{doc.at(row_path)}: a variable's name is letters, digits and '_' (not {bad[0]!r})")
    return tables


def _var_text(doc: _Document, path: Path, value: Any, problems: list[str]) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return doc.raw.get(path, str(value))  # as written: 9.90, not 9.9
    kind = "true/false (YAML reads yes, no, on and off so)" if isinstance(value, bool) else type(value).__name__
    problems.append(f"{doc.at(path)}: the variable '{path[-1]}' is {kind}: a value is text or a number (quote it)")
    return ""


FileVars = tuple[list[dict[str, str]] | None, set[str]]  # the file's table, and the variables used from it


def _items(doc: _Document, prompts: list, defaults: dict, file_vars: FileVars,
           problems: list[str]) -> Iterator[tuple[str, Any]]:
    """(where, prompt object) for check_items: each prompt, expanded over its variables."""
    count = 0
    for index, prompt in enumerate(prompts):
        path: Path = ("prompts", index)
        here = f"{doc.at(path)}, prompts[{index}]"
        if isinstance(prompt, str):  # a prompt with nothing but its text
            prompt = {"prompt": prompt}
        if not isinstance(prompt, dict):
            yield here, prompt  # check_items says what it must be
            continue
        found = _unknown(doc, path, prompt, PROMPT_KEYS, f"prompts[{index}]")
        item = {k: v for k, v in prompt.items() if k not in ("vars", "template")}
        if "system_prompt" not in item and defaults.get("system_prompt"):
            item["system_prompt"] = defaults["system_prompt"]
        expanded = _expand(doc, path, here, prompt, item, file_vars, found)
        problems += found
        count += len(expanded)
        if count > parsing.MAX_PROMPTS:
            problems.append(f"{here}: the file makes more than {parsing.MAX_PROMPTS} prompts, at most "
                            f"{parsing.MAX_PROMPTS} allowed")
            return
        yield from expanded


def _expand(doc: _Document, path: Path, here: str, prompt: dict, item: dict, file: FileVars,
            problems: list[str]) -> list[tuple[str, Any]]:
    """One prompt object per row of the table that applies to it (itself alone without one)."""
    template = prompt.get("template", True)
    if not isinstance(template, bool):
        problems.append(f"{doc.at((*path, 'template'))}: 'template' is true or false")
        return []
    own = _tables(doc, (*path, "vars"), prompt.get("vars"), problems)
    file_vars, file_used = file
    used = _used(item)
    if not template:
        if own is not None:
            problems.append(f"{here}: a prompt with 'template: false' takes no 'vars'")
        return [(here, item)]
    if own is None and (not used or not file_vars):
        if used:
            problems.append(f"{here}: it uses {_names(sorted(used), braces=True)} but no 'vars' give a value: add "
                            "'vars', or 'template: false' to keep the braces as text")
        return [(here, item)]
    if own is not None and not used:
        problems.append(f"{here}: it has 'vars' but uses no {{{{variable}}}}")
        return []
    rows = own if own is not None else file_vars or []
    if own is None:
        file_used.update(used)
    whose = "vars" if own is not None else "the file's vars"
    made: dict[str, int] = {}
    expanded = []
    for number, row in enumerate(rows):
        at = f"{here} {whose}[{number}]"
        if missing := sorted(used - set(row)):
            problems.append(f"{at}: no value for {_names(missing, braces=True)}")
            continue
        if own is not None and (unused := sorted(set(row) - used)):
            problems.append(f"{at}: gives {_names(unused)}, which the prompt does not use")
            continue
        filled = {k: (_fill(v, row, k, at, problems) if k in TEMPLATED else v) for k, v in item.items()}
        key = repr(sorted(filled.items(), key=lambda kv: kv[0]))
        if key in made:
            problems.append(f"{at} makes the same prompt as {whose}[{made[key]}] (it uses only "
                            f"{_names(sorted(used), braces=True)}): give the prompt its own 'vars'")
            continue
        made[key] = number
        expanded.append((at, filled))
    return expanded


def _used(item: dict) -> set[str]:
    """The variables a prompt object uses: those in its templated fields."""
    return _placeholders([v for k, v in item.items() if k in TEMPLATED])


def _placeholders(value: Any) -> set[str]:
    """The variables named anywhere in `value` (the strings of its lists and mappings too)."""
    if isinstance(value, dict):
        return set().union(set(), *map(_placeholders, value.values()))
    if isinstance(value, list):
        return set().union(set(), *map(_placeholders, value))
    return set(PLACEHOLDER.findall(value)) if isinstance(value, str) else set()


def _fill(value: Any, row: dict[str, str], field: str, at: str, problems: list[str]) -> Any:
    """`value` with each {{name}} replaced by its row's value, once (a value's own braces stay)."""
    if isinstance(value, dict):
        return {k: _fill(v, row, field, at, problems) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, row, field, at, problems) for v in value]
    if not isinstance(value, str):
        return value
    # measured before it is built: a long value used many times must not fill the memory
    size = len(value) + sum(len(row[m.group(1)]) - len(m.group(0)) for m in PLACEHOLDER.finditer(value))
    if size > parsing.max_prompt_chars():
        problems.append(f"{at}: '{field}' would be {size} characters once filled, at most "
                        f"{parsing.max_prompt_chars()} allowed")
        return ""
    return PLACEHOLDER.sub(lambda m: row[m.group(1)], value)


def _names(names: list[str], *, braces: bool = False) -> str:
    return ", ".join("{{" + n + "}}" if braces else repr(n) for n in names)


# --- writing ----------------------------------------------------------------------------
class _Dumper(yaml.SafeDumper):
    """Plain data only; a text of several lines as a block (`|`) where YAML can hold it exactly;
    never an alias (the same check twice is written twice: the import refuses aliases)."""

    def ignore_aliases(self, data) -> bool:
        return True


# Line breaks to YAML 1.1 beside \n: PyYAML writes them raw in a block or a single-quoted
# text and reads them back as "\n" or a space (found by the round-trip test); only the
# double-quoted style escapes them.
OTHER_BREAKS = ("\x85", "\u2028", "\u2029")


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # otherwise the emitter falls back to a quoted style where a block would not read back the same
    if any(b in value for b in OTHER_BREAKS):
        style: str | None = '"'
    else:
        style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


class _Flow(list):
    """A list written on one line, as a person writes checks and tags: [{type: contains, value: refund}]."""


def _flow(dumper: yaml.SafeDumper, value: _Flow) -> yaml.SequenceNode:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", list(value), flow_style=True)


_Dumper.add_representer(str, _text)
_Dumper.add_representer(_Flow, _flow)

HEADER = "# A prompt suite (LLM Arena). The format: docs/suites.md, \"Suite files\".\n"


def dump(suite_file: SuiteFile) -> str:
    """The suite as a YAML file that `load` reads back to the same suite: each prompt written out
    (the variables of the file it came from are already filled)."""
    document: dict[str, Any] = {}
    if suite_file.name:
        document["name"] = suite_file.name
    if suite_file.tag:
        document["tag"] = suite_file.tag
    if suite_file.default_checks:
        document["defaults"] = {"checks": _Flow(suite_file.default_checks)}
    document["prompts"] = [_prompt_document(spec) for spec in suite_file.prompts]
    return HEADER + yaml.dump(document, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=100)


def _prompt_document(spec: PromptSpec) -> dict:
    written = {k: _Flow(v) if k in parsing.LIST_FIELDS else v
               for k, v in spec.as_dict().items() if v not in ("", None, [])}
    if _used(written):
        written["template"] = False  # its braces are text, not variables
    return written
