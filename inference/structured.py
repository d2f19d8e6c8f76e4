"""Structured output: an optional JSON schema or regex that an answer must follow.

Pure checks, no Django and no torch, so the web side refuses a bad constraint before
anything is queued and marks each finished answer valid or not, and the workers build
their grammars from the same place. Decoding itself is constrained by llguidance
(`inference.constrained` for the transformers engine; llama.cpp and OpenAI-compatible
servers get the constraint in their own request fields, `inference.endpoint`).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import jsonschema
import llguidance

if TYPE_CHECKING:
    from llguidance._lib import JsonCompileOptions

# llguidance's JSON options: no free whitespace between tokens, so a model cannot spend
# its whole budget on blank lines inside an object (its default allows any amount).
JSON_OPTIONS: JsonCompileOptions = {"whitespace_flexible": False}
MAX_SCHEMA_CHARS = 20_000
MAX_REGEX_CHARS = 1_000

BOTH_GIVEN = "Give a JSON schema or a regex, not both."
REGEX_UNSUPPORTED = {
    "openai": "This model is served by an OpenAI-compatible endpoint, which takes a JSON schema "
              "but not a regex: constrain it with a JSON schema instead.",
    "server": "This model is served by an OpenAI-compatible server, which takes a JSON schema "
              "but not a regex: constrain it with a JSON schema instead.",
}


def constraint_problem(json_schema: Any = None, regex: Any = None) -> str | None:
    """Why this constraint cannot be used (a message a user can act on), or None if it can."""
    if json_schema is not None and regex is not None:
        return BOTH_GIVEN
    if json_schema is not None:
        return schema_problem(json_schema)
    if regex is not None:
        return regex_problem(regex)
    return None


def schema_problem(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return "The JSON schema must be a JSON object."
    if len(json.dumps(schema)) > MAX_SCHEMA_CHARS:
        return f"The JSON schema is too long (at most {MAX_SCHEMA_CHARS} characters)."
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
        grammar = grammar_for(schema, None)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        return f"Not a valid JSON schema{f' (at {where})' if where else ''}: {exc.message}"
    except RecursionError:  # a schema nested a few hundred deep: the checker recurses per level
        return "The JSON schema is nested too deeply."
    except ValueError as exc:  # llguidance refuses what it cannot read, e.g. an integer beyond 64 bits
        return f"The JSON schema cannot constrain decoding: {exc}"
    return _grammar_problem(grammar, "The JSON schema cannot constrain decoding")


def regex_problem(regex: Any) -> str | None:
    if not isinstance(regex, str) or not regex:
        return "The regex must be a non-empty string."
    if len(regex) > MAX_REGEX_CHARS:
        return f"The regex is too long (at most {MAX_REGEX_CHARS} characters)."
    try:
        re.compile(regex)
    except re.error as exc:
        return f"Not a valid regex: {exc}."
    return _grammar_problem(grammar_for(None, regex), "The regex cannot constrain decoding")


def engine_problem(engine: str, json_schema: Any = None, regex: Any = None) -> str | None:
    """Why a model served by `engine` cannot take this (valid) constraint, or None."""
    if regex is not None:
        return REGEX_UNSUPPORTED.get(engine)
    return None


def grammar_for(json_schema: dict | None, regex: str | None) -> str:
    """The llguidance grammar (its JSON form) of a constraint."""
    if json_schema is not None:
        return llguidance.LLMatcher.grammar_from_json_schema(json_schema, defaults=JSON_OPTIONS)
    assert regex is not None
    return llguidance.LLMatcher.grammar_from_regex(regex)


def lark_regex_grammar(regex: str) -> str:
    """A regex as a grammar llama.cpp's llguidance build reads (its `%llguidance` Lark form)."""
    return "%llguidance {}\nstart: /" + llguidance.regex_to_lark(regex, "") + "/\n"


def answer_valid(text: str, json_schema: dict | None = None, regex: str | None = None) -> bool:
    """Whether a whole answer follows its constraint: JSON valid for the schema, or a full
    regex match. (An answer with no constraint is not judged: callers store None.)"""
    if json_schema is not None:
        try:
            value = json.loads(text)
        except ValueError:
            return False
        return jsonschema.validators.validator_for(json_schema)(json_schema).is_valid(value)
    if regex is not None:
        return re.fullmatch(regex, text) is not None
    return True


def _grammar_problem(grammar: str, what: str) -> str | None:
    """llguidance's refusal of a grammar (what JSON Schema or Python's regexes allow but it
    cannot enforce: look-arounds, backreferences, some schema keywords), its first useful line."""
    is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar)
    if not is_error:
        return None
    lines = [line.strip() for line in messages[0].splitlines() if line.strip()]
    errors = [line.removeprefix("error: ") for line in lines if line.startswith("error:")]
    detail = (errors or lines or [""])[0]
    return f"{what}: {detail}"
