"""Parse an API request's JSON body into values the database can store, or say why not.

`json.loads` accepts things no later step can handle, and each became a 500 when fuzzed:
- a lone UTF-16 surrogate (`"\\ud800"`): a Python str that cannot be encoded to UTF-8, so
  the first INSERT fails (SQLite and PostgreSQL alike);
- a NUL character (`"\\u0000"`): PostgreSQL refuses it in text and in jsonb;
- nesting deeper than the interpreter's recursion limit: RecursionError;
- an integer of more than 4300 digits: a bare ValueError (not a JSONDecodeError).
`parse` turns all of them into a ValueError whose message is fit for a 400.
"""

from __future__ import annotations

import json
from typing import Any


def parse(raw: bytes | str, what: str = "The request body") -> Any:
    """The decoded body; raises ValueError with a message for the client, naming `what` was
    parsed (a prompt suite's upload names the line)."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise ValueError(f"{what} is not valid JSON: it is nested too deeply.") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} is not valid JSON: it is not UTF-8 ({exc.reason}).") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} is not valid JSON: {exc}") from None
    except ValueError as exc:  # e.g. an integer too long to convert
        raise ValueError(f"{what} is not valid JSON: {exc}") from None
    problem = unstorable_text(value)
    if problem:
        raise ValueError(f"{what} cannot be accepted: {problem}")
    return value


def unstorable_text(value: Any) -> str:
    """Why some string in `value` (a key or a value, at any depth) cannot be stored ("" if none)."""
    stack = [value]
    while stack:  # iterative: a body may be nested almost as deep as the recursion limit
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            if "\x00" in item:
                return "text must not contain NUL characters (\\u0000)."
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "text must not contain lone UTF-16 surrogates (such as \\ud800): they are not characters."
    return ""
