"""OpenAPI 3.1 path items of the suite endpoints, merged into arena.api.openapi.SPEC."""

from arena.api.openapi import _BLANK, LIMITED, PARAMS, PROMPT, SYSTEM_PROMPT, TAG, TEXT, TOO_LARGE, _err, _json
from inference.structured import MAX_REGEX_CHARS

from . import judge, parsing
from .models import NAME_MAX_LENGTH, SuiteRun
from .runs_api import PARAM_FIELDS


def _or_null(schema: dict) -> dict:
    return {**schema, "type": [schema["type"], "null"]}


NAME = {"type": "string", "minLength": 1, "maxLength": NAME_MAX_LENGTH,
        "pattern": rf"^[^\u0000]*[^\u0000{_BLANK}][^\u0000]*$",
        "description": f"Not blank, at most {NAME_MAX_LENGTH} characters; stored with blanks trimmed"}

_CONSTRAINT = ("At most one of json_schema and regex: an answer constraint. json_schema must be a valid "
               "JSON Schema, regex a regex Python compiles, and either one a grammar the decoder can enforce "
               "(no look-arounds, no unsatisfiable schema); null or \"\" count as absent.")

PROMPT_IN = {
    "type": "object",
    "required": ["prompt"],
    "additionalProperties": False,
    "description": _CONSTRAINT,
    "properties": {
        "prompt": PROMPT,
        "system_prompt": _or_null({**SYSTEM_PROMPT, "description": "Empty: the model's own"}),
        "reference": _or_null({**SYSTEM_PROMPT, "description": "A reference answer"}),
        "json_schema": {"type": ["object", "null"], "description": "A JSON Schema the answer must satisfy"},
        "regex": _or_null({**TEXT, "maxLength": MAX_REGEX_CHARS,
                           "description": "A regex the answer must satisfy"}),
    },
}

PROMPT_OUT = {
    "type": "object",
    "required": ["position", "prompt", "system_prompt", "reference", "json_schema", "regex"],
    "properties": {
        "position": {"type": "integer", "minimum": 1},
        "prompt": {"type": "string"},
        "system_prompt": {"type": "string"},
        "reference": {"type": "string"},
        "json_schema": {"type": ["object", "null"]},
        "regex": {"type": "string"},
    },
}

SUMMARY = {
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

SUITE = {**SUMMARY, "required": [*SUMMARY["required"], "prompts"],
         "properties": {**SUMMARY["properties"], "prompts": {"type": "array", "items": PROMPT_OUT}}}

_ID = [{"name": "id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}]

OPENAPI_PATHS = {
    "/api/v1/suites": {
        "post": {
            "operationId": "createSuite",
            "summary": "Save a prompt suite: a named, tagged list of prompts",
            "requestBody": {"required": True, **_json({
                "type": "object",
                "required": ["name", "prompts"],
                "additionalProperties": False,
                "properties": {
                    "name": NAME,
                    "tag": TAG,
                    "prompts": {"type": "array", "minItems": 1, "maxItems": parsing.MAX_PROMPTS, "items": PROMPT_IN},
                },
            })},
            "responses": {
                "201": {"description": "Created", **_json(SUITE)},
                "400": _err("Invalid request; every problem with the prompts is named by its index, "
                            "e.g. \"prompts[2]: 'prompt' is missing\""),
                "401": _err("Missing or invalid token"),
                **TOO_LARGE,
            },
        },
        "get": {
            "operationId": "listSuites",
            "summary": "Your prompt suites, newest first (without their prompts)",
            "responses": {
                "200": {"description": "Your suites", **_json({
                    "type": "object", "required": ["suites"],
                    "properties": {"suites": {"type": "array", "items": SUMMARY}}})},
                "401": _err("Missing or invalid token"),
            },
        },
    },
    "/api/v1/suites/{id}": {
        "get": {
            "operationId": "getSuite",
            "summary": "A prompt suite with its prompts",
            "parameters": _ID,
            "responses": {
                "200": {"description": "The suite", **_json(SUITE)},
                "401": _err("Missing or invalid token"),
                "404": _err("No such suite (or not yours)"),
            },
        },
        "delete": {
            "operationId": "deleteSuite",
            "summary": "Delete one of your prompt suites",
            "parameters": _ID,
            "responses": {
                "204": {"description": "Deleted"},
                "401": _err("Missing or invalid token"),
                "404": _err("No such suite (or not yours)"),
                "409": _err("The suite has runs: their answers and verdicts refer to it"),
            },
        },
    },
}


# --- suite runs -----------------------------------------------------------------------------
RUN_PARAMS = {**PARAMS, "description": "Sampling for every answer over each contestant's defaults (a prompt's "
              "constraint is added to it); null counts as absent.",
              "properties": {name: PARAMS["properties"][name] for name in sorted(PARAM_FIELDS)}}

_FORMAT = {"type": "string", "enum": SuiteRun.Format.values}

RESULT = {
    "type": "object",
    "description": "A contestant's tally: the model judge's verdicts, its answers, and how many of its answers "
                   "to constrained prompts followed their JSON schema or regex",
    "required": ["model", "wins", "losses", "ties", "answered", "failed", "constrained", "valid", "validity_rate"],
    "properties": {
        "model": {"type": "string", "description": "A catalogue slug"},
        **{name: {"type": "integer", "minimum": 0} for name in ("wins", "losses", "ties", "answered", "constrained",
                                                                "valid")},
        "failed": {"type": "integer", "minimum": 0, "description": "Answers that failed every attempt"},
        "validity_rate": {"type": ["number", "null"], "minimum": 0, "maximum": 1,
                          "description": "valid / constrained; null without constrained answers"},
    },
}

RUN_SUMMARY = {
    "type": "object",
    "required": ["id", "suite", "format", "judge", "state", "progress", "created_at", "finished_at", "url"],
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "suite": {"type": "string", "format": "uuid"},
        "format": _FORMAT,
        "judge": {"type": ["string", "null"], "description": "The judge's slug; null: people judge"},
        "state": {"type": "string", "enum": SuiteRun.State.values},
        "progress": {"type": "object", "required": ["done", "total", "percent", "eta_s"], "properties": {
            "done": {"type": "integer", "minimum": 0},
            "total": {"type": "integer", "minimum": 0, "description": "0 until the runner's first step"},
            "percent": {"type": "integer", "minimum": 0, "maximum": 100},
            "eta_s": {"type": ["number", "null"], "description": "About how long the rest takes, at the pace so far"},
        }},
        "created_at": {"type": "string", "format": "date-time"},
        "finished_at": {"type": ["string", "null"], "format": "date-time"},
        "url": {"type": "string", "description": "The run's page"},
    },
}

RUN = {**RUN_SUMMARY, "required": [*RUN_SUMMARY["required"], "results"],
       "properties": {**RUN_SUMMARY["properties"],
                      "results": {"type": "array", "items": RESULT, "description": "Per contestant, in order"},
                      "judge_agreement": {
                          "type": ["object", "null"],
                          "description": ("How often the judge said the same when shown each answer first (a pair "
                                          "whose two orders disagree is a tie); null: no judge or no pair yet"),
                          "properties": {"agreed": {"type": "integer"}, "total": {"type": "integer"},
                                         "percent": {"type": "integer"}}}}}

RUN_PATHS = {
    "/api/v1/suite-runs": {
        "post": {
            "operationId": "createSuiteRun",
            "summary": "Run a prompt suite: each contestant answers every prompt, pairs judged by a model or by people",
            "requestBody": {"required": True, **_json({
                "type": "object",
                "required": ["suite", "contestants"],
                "additionalProperties": False,
                "properties": {
                    "suite": {"type": "string", "format": "uuid", "description": "One of your suites"},
                    "contestants": {"type": "array", "uniqueItems": True, "items": {"type": "string"},
                                    "minItems": SuiteRun.MIN_CONTESTANTS, "maxItems": SuiteRun.MAX_CONTESTANTS,
                                    "description": "Distinct enabled catalogue slugs, in order (a knockout's seeds)"},
                    "format": {**_FORMAT, "default": SuiteRun.Format.ROUND_ROBIN,
                               "description": "round_robin: every pair on every prompt; knockout: a bracket per "
                                              "prompt"},
                    "judge": {"type": ["string", "null"],
                              "description": "An enabled catalogue slug: the model that judges each pair (in both "
                                             "orders); null: people judge"},
                    "judge_template": _or_null({
                        **TEXT, "maxLength": judge.MAX_TEMPLATE_CHARS,
                        "description": "The judge's prompt; it must show {question}, {answer_a} and {answer_b} and may "
                                       "show {reference}; a literal brace is written {{ or }}. Absent, null or "
                                       "\"\": the default"}),
                    "params": RUN_PARAMS,
                },
            })},
            "responses": {
                "201": {"description": "Started; the run goes on in the background", **_json(RUN)},
                "400": _err("Invalid request; `fields` names the field (an unknown or disabled slug, the number "
                            "of contestants, the judge template, params out of range, a contestant that cannot "
                            "follow a prompt's constraint)"),
                "401": _err("Missing or invalid token"),
                "404": _err("No such suite (or not yours)"),
                **TOO_LARGE, **LIMITED,
            },
        },
        "get": {
            "operationId": "listSuiteRuns",
            "summary": "Your suite runs, newest first (without their results)",
            "responses": {
                "200": {"description": "Your runs", **_json({
                    "type": "object", "required": ["suite_runs"],
                    "properties": {"suite_runs": {"type": "array", "items": RUN_SUMMARY}}})},
                "401": _err("Missing or invalid token"),
            },
        },
    },
    "/api/v1/suite-runs/{id}": {
        "get": {
            "operationId": "getSuiteRun",
            "summary": "A suite run: its progress and each contestant's results so far",
            "parameters": _ID,
            "responses": {
                "200": {"description": "The run", **_json(RUN)},
                "401": _err("Missing or invalid token"),
                "404": _err("No such suite run (or not yours)"),
            },
        },
    },
    "/api/v1/suite-runs/{id}/cancel": {
        "post": {
            "operationId": "cancelSuiteRun",
            "summary": "Stop a running suite run: nothing new starts and its live generations are cancelled",
            "parameters": _ID,
            "responses": {
                "200": {"description": "The cancelled run", **_json(RUN)},
                "401": _err("Missing or invalid token"),
                "404": _err("No such suite run (or not yours)"),
                "409": _err("The run has already ended"),
            },
        },
    },
}

OPENAPI_PATHS |= RUN_PATHS
