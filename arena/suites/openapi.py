"""OpenAPI 3.1 path items of the suite endpoints, assembled with the others in arena/openapi.py."""

from arena.api.openapi import (
    BLANK,
    PROMPT,
    SYSTEM_PROMPT,
    TAG,
    TEXT,
    TOO_LARGE,
    UUID_ID,
    Schema,
    error_response,
    json_content,
)
from inference.structured import MAX_REGEX_CHARS

from . import checks, parsing
from .models import NAME_MAX_LENGTH


def or_null(schema: dict) -> dict:
    return {**schema, "type": [schema["type"], "null"]}


NAME = {"type": "string", "minLength": 1, "maxLength": NAME_MAX_LENGTH,
        "pattern": rf"^[^\u0000]*[^\u0000{BLANK}][^\u0000]*$",
        "description": f"Not blank, at most {NAME_MAX_LENGTH} characters; stored with blanks trimmed"}

_CONSTRAINT = ("At most one of json_schema and regex: an answer constraint. json_schema must be a valid "
               "JSON Schema, regex a regex Python compiles, and either one a grammar the decoder can enforce "
               "(no look-arounds, no unsatisfiable schema); null or \"\" count as absent.")

CHECK = {
    "type": "object",
    "required": ["type"],
    "description": "A check of each answer (docs/suites.md, Checks): the type's own fields, and optionally weight "
                   "(> 0), name, not (negates it), threshold (0..1, a check with a score). An invalid one is "
                   "refused: \"prompts[0]: checks: check 1: regex: not a valid regex: ...\"",
    "properties": {
        "type": {"enum": list(checks.TYPES)},
        "weight": {"type": "number", "exclusiveMinimum": 0},
        "name": {"type": "string", "minLength": 1, "maxLength": 100},
        "not": {"type": "boolean"},
        "threshold": {"type": "number", "minimum": 0, "maximum": 1},
    },
}
CHECKS_IN = {"type": ["array", "null"], "maxItems": checks.MAX_CHECKS, "items": CHECK}
CHECKS_OUT = {"type": "array", "items": {"type": "object", "required": ["type"]}}

PROMPT_IN = {
    "type": "object",
    "required": ["prompt"],
    "additionalProperties": False,
    "description": _CONSTRAINT,
    "properties": {
        "prompt": PROMPT,
        "system_prompt": or_null({**SYSTEM_PROMPT, "description": "Empty: the model's own"}),
        "reference": or_null({**SYSTEM_PROMPT, "description": "A reference answer"}),
        "json_schema": {"type": ["object", "null"], "description": "A JSON Schema the answer must satisfy"},
        "regex": or_null({**TEXT, "maxLength": MAX_REGEX_CHARS,
                           "description": "A regex the answer must satisfy"}),
        "checks": {**CHECKS_IN, "description": "This prompt's checks of each answer, after the suite's defaults"},
    },
}

PROMPT_OUT = {
    "type": "object",
    "required": ["position", "prompt", "system_prompt", "reference", "json_schema", "regex", "checks"],
    "properties": {
        "position": {"type": "integer", "minimum": 1},
        "prompt": {"type": "string"},
        "system_prompt": {"type": "string"},
        "reference": {"type": "string"},
        "json_schema": {"type": ["object", "null"]},
        "regex": {"type": "string"},
        "checks": CHECKS_OUT,
    },
}

SUMMARY: Schema = {
    "type": "object",
    "required": ["id", "name", "tag", "prompt_count", "created_at", "url"],
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "name": {"type": "string"},
        "tag": TAG,
        "prompt_count": {"type": "integer", "minimum": 1},
        "created_at": {"type": "string", "format": "date-time"},
        "url": {"type": "string", "description": "The suite's page"},
    },
}

SUITE = {**SUMMARY, "required": [*SUMMARY["required"], "default_checks", "prompts"],
         "properties": {**SUMMARY["properties"], "default_checks": CHECKS_OUT,
                        "prompts": {"type": "array", "items": PROMPT_OUT}}}


OPENAPI_PATHS = {
    "/api/v1/suites": {
        "post": {
            "operationId": "createSuite",
            "summary": "Save a prompt suite: a named, tagged list of prompts",
            "requestBody": {"required": True, **json_content({
                "type": "object",
                "required": ["name", "prompts"],
                "additionalProperties": False,
                "properties": {
                    "name": NAME,
                    "tag": TAG,
                    "prompts": {"type": "array", "minItems": 1, "maxItems": parsing.MAX_PROMPTS, "items": PROMPT_IN},
                    "default_checks": {**CHECKS_IN, "description": "Checks every prompt's answers get first"},
                },
            })},
            "responses": {
                "201": {"description": "Created", **json_content(SUITE)},
                "400": error_response("Invalid request; every problem with the prompts is named by its index, "
                            "e.g. \"prompts[2]: 'prompt' is missing\""),
                "401": error_response("Missing or invalid token"),
                **TOO_LARGE,
            },
        },
        "get": {
            "operationId": "listSuites",
            "summary": "Your prompt suites, newest first (without their prompts)",
            "responses": {
                "200": {"description": "Your suites", **json_content({
                    "type": "object", "required": ["suites"],
                    "properties": {"suites": {"type": "array", "items": SUMMARY}}})},
                "401": error_response("Missing or invalid token"),
            },
        },
    },
    "/api/v1/suites/{id}": {
        "get": {
            "operationId": "getSuite",
            "summary": "A prompt suite with its prompts",
            "parameters": UUID_ID,
            "responses": {
                "200": {"description": "The suite", **json_content(SUITE)},
                "401": error_response("Missing or invalid token"),
                "404": error_response("No such suite (or not yours)"),
            },
        },
        "delete": {
            "operationId": "deleteSuite",
            "summary": "Delete one of your prompt suites",
            "parameters": UUID_ID,
            "responses": {
                "204": {"description": "Deleted"},
                "401": error_response("Missing or invalid token"),
                "404": error_response("No such suite (or not yours)"),
                "409": error_response("The suite has runs: their answers and verdicts refer to it"),
            },
        },
    },
}
