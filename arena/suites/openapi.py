"""OpenAPI 3.1 path items of the suite endpoints, assembled with the others in arena/openapi.py."""

from arena.api.openapi import (
    BLANK,
    PROMPT,
    SYSTEM_PROMPT,
    TAG,
    TEXT,
    TOO_LARGE,
    UUID_ID,
    WHOSE,
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
        "tags": {"type": ["array", "null"], "maxItems": parsing.MAX_TAGS, "items": TAG,
                 "description": "The prompt's own tags"},
    },
}

PROMPT_OUT = {
    "type": "object",
    "required": ["position", "prompt", "system_prompt", "reference", "json_schema", "regex", "checks", "tags"],
    "properties": {
        "position": {"type": "integer", "minimum": 1},
        "prompt": {"type": "string"},
        "system_prompt": {"type": "string"},
        "reference": {"type": "string"},
        "json_schema": {"type": ["object", "null"]},
        "regex": {"type": "string"},
        "checks": CHECKS_OUT,
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}

SUMMARY: Schema = {
    "type": "object",
    "required": ["id", "name", "tag", "prompt_count", "version", "created_at", "url"],
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        **WHOSE,
        "name": {"type": "string"},
        "tag": TAG,
        "prompt_count": {"type": "integer", "minimum": 1, "description": "The current version's prompts"},
        "version": {"type": "integer", "minimum": 1,
                    "description": "The current version: each import of a changed file adds one"},
        "created_at": {"type": "string", "format": "date-time"},
        "url": {"type": "string", "description": "The suite's page"},
    },
}

SUITE = {**SUMMARY, "required": [*SUMMARY["required"], "default_checks", "prompts"],
         "properties": {**SUMMARY["properties"], "default_checks": CHECKS_OUT,
                        "prompts": {"type": "array", "items": PROMPT_OUT,
                                    "description": "The current version's prompts"}}}

SUITE_BODY = {
    "type": "object",
    "required": ["prompts"],
    "additionalProperties": False,
    "properties": {
        "name": NAME,
        "tag": TAG,
        "default_checks": {**CHECKS_IN, "description": "Checks every prompt's answers get first; null: none. Left "
                                                       "out of a new version (PUT): the suite's stay"},
        "prompts": {"type": "array", "minItems": 1, "maxItems": parsing.MAX_PROMPTS, "items": PROMPT_IN},
    },
}

# A suite file may also be the body itself, its format by its Content-Type (FILE_TYPES in
# arena/suites/api.py); said in the descriptions, not as request content: no schema says which
# text is a valid suite file, so a fuzzer could only expect any string to be accepted.
FILE_BODY = ("Or a suite file as the body itself: Content-Type application/yaml (a YAML suite file, which may "
             "also name the suite), application/jsonl or text/csv (docs/suites.md); ?name= and ?tag= name the suite "
             "where the file does not.")


def suite_body(required_name: bool) -> dict:
    body = {**SUITE_BODY, "required": ["name", "prompts"] if required_name else ["prompts"]}
    return {"required": True, "description": FILE_BODY, **json_content(body)}


OPENAPI_PATHS = {
    "/api/v1/suites": {
        "post": {
            "operationId": "createSuite",
            "summary": "Save a prompt suite: a named, tagged list of prompts",
            "requestBody": suite_body(True),
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
        "put": {
            "operationId": "importSuiteVersion",
            "summary": "Replace a suite's prompts with a new version (its file imported again)",
            "description": "A new version when the prompts or default checks differ from the current ones "
                           "(`new_version` true), else none; earlier runs keep the version they ran. A name or "
                           "tag given replaces the suite's.",
            "parameters": UUID_ID,
            "requestBody": suite_body(False),
            "responses": {
                "200": {"description": "The suite, now", **json_content({
                    **SUITE, "required": [*SUITE["required"], "new_version"],
                    "properties": {**SUITE["properties"], "new_version": {"type": "boolean"}}})},
                "400": error_response("Invalid request; every problem with the prompts is named"),
                "401": error_response("Missing or invalid token"),
                "404": error_response("No such suite (or not yours)"),
                **TOO_LARGE,
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
    "/api/v1/suites/{id}/suite.{format}": {
        "get": {
            "operationId": "exportSuite",
            "summary": "A suite's current version as a file that imports back to the same suite",
            "parameters": [*UUID_ID, {"name": "format", "in": "path", "required": True,
                                      "schema": {"type": "string", "enum": ["yaml", "jsonl", "csv"]}}],
            "responses": {
                "200": {"description": "The file (YAML keeps everything; JSONL and CSV not the default checks)",
                        "content": {"application/yaml": {"schema": {  # as a YAML reader gives it
                                        "type": "object", "required": ["prompts"],
                                        "properties": {"name": {"type": "string"}, "tag": TAG,
                                                       "defaults": {"type": "object"},
                                                       "prompts": {"type": "array", "items": {"type": "object"}}}}},
                                    "application/jsonl": {"schema": {"type": "string"}},
                                    "text/csv": {"schema": {"type": "string"}}}},
                "401": error_response("Missing or invalid token"),
                "404": error_response("No such suite (or not yours), or no such format"),
            },
        },
    },
}
