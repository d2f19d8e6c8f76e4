"""OpenAPI 3.1 building blocks of the v1 API: the schemas every app's endpoints share (the error,
sampling parameters, prompts, tags), the response helpers and the document's skeleton.

Each app describes its own endpoints beside them (arena/<app>/openapi.py, OPENAPI_PATHS); the
whole document is assembled at the top, in arena/openapi.py."""

from typing import Any

from django.conf import settings

from arena.api.http import CODES
from inference.protocol import SamplingParams
from inference.structured import MAX_REGEX_CHARS

Schema = dict[str, Any]  # a JSON Schema or OpenAPI object: its values are JSON of any kind

_L = SamplingParams.LIMITS

# Every error's machine code (arena.api.http.CODES); the message is a sentence for people.
CODE: Schema = {"type": "string", "enum": list(CODES),
                "description": "What went wrong, for programs: " + "; ".join(f"{k} ({v})" for k, v in CODES.items())}

ERROR: Schema = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": CODE,
                "message": {"type": "string"},
                "fields": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        }
    },
}

PARAMS: Schema = {
    "type": "object",
    "additionalProperties": False,
    "description": "Sampling parameters over the model's defaults; null counts as absent.",
    "properties": {
        "temperature": {"type": ["number", "null"], "minimum": _L["temperature"][0], "maximum": _L["temperature"][1]},
        "top_p": {"type": ["number", "null"], "minimum": _L["top_p"][0], "maximum": _L["top_p"][1]},
        "max_new_tokens": {"type": ["integer", "null"], "minimum": _L["max_new_tokens"][0],
                           "maximum": _L["max_new_tokens"][1]},
        "seed": {"type": ["integer", "null"], "minimum": 0, "maximum": 2**32 - 1},
        "stop": {
            "type": ["array", "null"], "maxItems": SamplingParams.MAX_STOP_SEQUENCES,
            "items": {"type": "string", "minLength": 1, "maxLength": SamplingParams.MAX_STOP_CHARS,
                      "pattern": r"^[^\u0000]*$"},
        },
        "json_schema": {
            "type": ["object", "null"],
            "description": "Structured output: decoding is constrained to JSON valid for this JSON Schema, and the "
                           "answer is checked against it (`output_valid`). Refused (400) when it is not a valid "
                           "schema or one the constrained decoder cannot enforce, or when a key or string in it holds "
                           "a NUL character (as anywhere in a body). Not with `regex`.",
        },
        "regex": {
            "type": ["string", "null"], "minLength": 1, "maxLength": MAX_REGEX_CHARS,
            "description": "Structured output: the whole answer is constrained to match this regex (Python syntax, "
                           "no look-arounds or backreferences). Refused (400) when invalid, or for a model served by "
                           "an OpenAI-compatible endpoint. Not with `json_schema`.",
        },
    },
}

# Python's str.isspace() characters, spelled out: JSON Schema's \s is ECMAScript's, which differs
# (no U+001C-U+001F or U+0085, but U+FEFF), and the server judges "blank" the Python way.
BLANK = r"\t\n\u000b\f\r\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"

TEXT: Schema = {"type": "string", "pattern": r"^[^\u0000]*$", "description": "Any text without NUL characters"}

SYSTEM_PROMPT: Schema = {**TEXT, "maxLength": settings.ARENA_MAX_PROMPT_CHARS,
                 "description": f"No NUL characters, at most {settings.ARENA_MAX_PROMPT_CHARS} characters"}

PROMPT: Schema = {
    "type": "string", "minLength": 1, "maxLength": settings.ARENA_MAX_PROMPT_CHARS,
    "pattern": rf"^[^\u0000]*[^\u0000{BLANK}][^\u0000]*$",
    "description": f"Not blank, no NUL characters, at most {settings.ARENA_MAX_PROMPT_CHARS} characters "
                   "(ARENA_MAX_PROMPT_CHARS); kept as written, leading spaces included",
}

# Whose an object is (arena.teams.membership.whose): in every object's JSON and export row.
WHOSE: dict[str, Schema] = {
    "owner": {"type": "string", "description": "Its owner's username"},
    "team": {"type": "string", "description": "The team it was made in (its members open it read-only); empty: none"},
}
TAG: Schema = {"type": "string", "maxLength": 40, "pattern": rf"^[{BLANK}]*(?:\w[\w{BLANK}-]*)?$",
       "description": "A prompt tag such as coding: up to 40 letters (any script), digits, '-' or '_'; stored in "
                      "lower case with blanks trimmed and inner runs of blanks as '-'. The leaderboard and history "
                      "filter by it"}

LIMIT_ERROR: Schema = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {
        "type": "object",
        "required": ["code", "message", "limit", "allowed", "current", "retry_after_s"],
        "properties": {
            "code": {"type": "string", "enum": ["limit_exceeded"]},
            "message": {"type": "string"},
            "limit": {"type": "string", "enum": ["requests_per_minute", "concurrent_generations"]},
            "allowed": {"type": "integer"},
            "current": {"type": "integer"},
            "retry_after_s": {"type": "integer", "minimum": 1},
        },
    }},
}


def json_content(schema: Schema) -> Schema:
    """A request or response body of JSON in this schema."""
    return {"content": {"application/json": {"schema": schema}}}


def error_response(description: str) -> Schema:
    """An error response ({"error": {"code", "message", "fields"}}) and when it happens."""
    return {"description": description, **json_content(ERROR)}


# Every operation that starts generations can meet a per-user limit (arena.generations.limits), and every
# one that reads a body the size limit (DATA_UPLOAD_MAX_MEMORY_SIZE).
# The path parameter of every /api/v1/<things>/<uuid:id> endpoint.
UUID_ID: list[Schema] = [{"name": "id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}]

LIMITED: Schema = {
    "429": {"description": "A per-user limit (ARENA_RATE_LIMIT_PER_MIN, ARENA_MAX_CONCURRENT_PER_USER): "
                           "wait Retry-After seconds",
            "headers": {"Retry-After": {"required": True, "schema": {"type": "integer", "minimum": 1}}},
            **json_content(LIMIT_ERROR)},
}
TOO_LARGE: Schema = {"413": error_response("The body is larger than the server accepts")}


def document(schemas: dict, *paths: dict) -> dict:
    """The OpenAPI document of the v1 API: the shared schemas and `schemas` as components, and
    the path items of every app (each path described once)."""
    merged: dict = {}
    for items in paths:
        if twice := merged.keys() & items.keys():
            raise ValueError(f"Described twice: {sorted(twice)}")
        merged |= items
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "LLM Arena API",
            "version": "1.0.0",
            "description": "Automate generations against the model catalogue. "
            "Authenticate with `Authorization: Bearer <token>`: make a token on your API tokens page "
            "(`/account/tokens/`), or an operator runs `python manage.py arena_token USERNAME`.",
        },
        "servers": [{"url": "/"}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": ERROR, "Params": PARAMS, **schemas},
        },
        "security": [{"bearer": []}],
        "paths": merged,
    }
