"""OpenAPI 3.1 description of the v1 API (kept beside the views it describes)."""

from django.conf import settings

from arena.generations.status import FINISH_REASON_SCHEMA
from inference.protocol import SamplingParams
from inference.structured import MAX_REGEX_CHARS

_L = SamplingParams.LIMITS

ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message"],
            "properties": {
                "message": {"type": "string"},
                "fields": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        }
    },
}

PARAMS = {
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
                           "schema or one the constrained decoder cannot enforce. Not with `regex`.",
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
_BLANK = r"\t\n\u000b\f\r\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"

TEXT = {"type": "string", "pattern": r"^[^\u0000]*$", "description": "Any text without NUL characters"}

SYSTEM_PROMPT = {**TEXT, "maxLength": settings.ARENA_MAX_PROMPT_CHARS,
                 "description": f"No NUL characters, at most {settings.ARENA_MAX_PROMPT_CHARS} characters"}

PROMPT = {
    "type": "string", "minLength": 1, "maxLength": settings.ARENA_MAX_PROMPT_CHARS,
    "pattern": rf"^[^\u0000]*[^\u0000{_BLANK}][^\u0000]*$",
    "description": f"Not blank, no NUL characters, at most {settings.ARENA_MAX_PROMPT_CHARS} characters "
                   "(ARENA_MAX_PROMPT_CHARS); kept as written, leading spaces included",
}

MODEL = {
    "type": "object",
    "properties": {
        "slug": {"type": "string"},
        "name": {"type": "string"},
        "description": {"type": "string"},
        "engine": {"type": "string", "enum": ["transformers", "llamacpp", "openai", "server"],
                   "description": "Who runs the model: this app's transformers worker, llama.cpp on a GGUF file, "
                                  "an OpenAI-compatible endpoint, or a server started from a command"},
        "kind": {"type": "string", "enum": ["full", "awq", "speculative"]},
        "base": {"type": "boolean", "description": "A base model: the prompt is continued as plain text"},
        "precision": {"type": "string"},
        "default_params": PARAMS,
    },
}

TAG = {"type": "string", "maxLength": 40, "pattern": rf"^[{_BLANK}]*(?:\w[\w{_BLANK}-]*)?$",
       "description": "A prompt tag such as coding: up to 40 letters (any script), digits, '-' or '_'; stored in "
                      "lower case with blanks trimmed and inner runs of blanks as '-'. The leaderboard and history "
                      "filter by it"}

FINISH_REASON = FINISH_REASON_SCHEMA
TTFT_TEXT = ("Seconds from when the model's worker began the answer to its first token: neither the wait in line "
             "nor the model's load (load_wait_s, queue_wait_s)")
LOAD_TEXT = "Seconds waiting for a worker to be ready: the model's load on a cold start, about 0 when warm"
QUEUE_TEXT = "Seconds waiting in line for a free slot (the fair line, then the worker's own queue)"

OUTPUT_VALID = {"type": ["boolean", "null"],
                "description": "Whether the finished answer follows params.json_schema or params.regex; null when "
                               "it had neither or has not finished"}

GENERATION = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "model": {"type": "string"},
        "status": {"type": "string", "enum": ["queued", "loading", "running", "done", "failed", "cancelled"]},
        "prompt": {"type": "string"},
        "system_prompt": {"type": "string"},
        "params": PARAMS,
        "tag": TAG,
        "text": {"type": "string"},
        "finish_reason": FINISH_REASON,
        "failure_reason": {"type": "string"},
        "output_valid": OUTPUT_VALID,
        "metrics": {"type": "object", "properties": {
            "prompt_tokens": {"type": ["integer", "null"]},
            "generated_tokens": {"type": ["integer", "null"]},
            "time_to_first_token_s": {"type": ["number", "null"], "description": TTFT_TEXT},
            "tokens_per_s": {"type": ["number", "null"], "description": "Decode rate after the first token"},
            "load_wait_s": {"type": ["number", "null"], "description": LOAD_TEXT},
            "queue_wait_s": {"type": ["number", "null"], "description": QUEUE_TEXT},
        }},
        "request_metrics": {"type": "object"},
        "created_at": {"type": "string", "format": "date-time"},
        "finished_at": {"type": ["string", "null"], "format": "date-time"},
        "url": {"type": "string"},
        "queue": {"type": ["object", "null"],
                  "description": "GET /api/v1/generations/{id} only: while it waits for a free slot, its place in "
                                 "the installation's fair line (position 1: next) and how many wait; else null",
                  "properties": {"position": {"type": "integer", "minimum": 1},
                                 "waiting": {"type": "integer", "minimum": 1}}},
    },
}


SIDE = {
    "type": "object",
    "description": "One answer. `model`, `system_prompt`, `params` and `metrics` are left out while the battle "
                   "is blind.",
    "properties": {
        "status": GENERATION["properties"]["status"],
        "text": {"type": "string"},
        "finish_reason": FINISH_REASON,
        "failure_reason": {"type": "string"},
        "output_valid": OUTPUT_VALID,
        "model": {"type": "string"},
        "system_prompt": {"type": "string"},
        "params": PARAMS,
        "metrics": GENERATION["properties"]["metrics"],
    },
}

OUTCOMES = ["left", "right", "tie", "both_bad"]

COMPARISON = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "mode": {"type": "string", "enum": ["comparison", "tournament"]},
        "blind": {"type": "boolean"},
        "tag": TAG,
        "prompt": {"type": "string"},
        "history": {"type": "array", "items": {"type": "object"}},
        "left": SIDE,
        "right": SIDE,
        "finished": {"type": "boolean"},
        "outcome": {"type": ["string", "null"], "enum": [*OUTCOMES, None]},
        "self_identified": {"type": ["boolean", "null"]},
        "parent": {"type": ["string", "null"]},
        "created_at": {"type": "string", "format": "date-time"},
        "url": {"type": "string"},
    },
}

_ID = [{"name": "id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}]


LIMIT_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {
        "type": "object",
        "required": ["message", "limit", "allowed", "current", "retry_after_s"],
        "properties": {
            "message": {"type": "string"},
            "limit": {"type": "string", "enum": ["requests_per_minute", "concurrent_generations"]},
            "allowed": {"type": "integer"},
            "current": {"type": "integer"},
            "retry_after_s": {"type": "integer", "minimum": 1},
        },
    }},
}


def _json(schema):
    return {"content": {"application/json": {"schema": schema}}}


def _err(description):
    return {"description": description, **_json(ERROR)}


# Every operation that starts generations can meet a per-user limit (arena.generations.limits), and every
# one that reads a body the size limit (DATA_UPLOAD_MAX_MEMORY_SIZE).
LIMITED = {
    "429": {"description": "A per-user limit (ARENA_RATE_LIMIT_PER_MIN, ARENA_MAX_CONCURRENT_PER_USER): "
                           "wait Retry-After seconds",
            "headers": {"Retry-After": {"required": True, "schema": {"type": "integer", "minimum": 1}}},
            **_json(LIMIT_ERROR)},
}
TOO_LARGE = {"413": _err("The body is larger than the server accepts")}


SPEC = {
    "openapi": "3.1.0",
    "info": {
        "title": "LLM Arena API",
        "version": "1.0.0",
        "description": "Automate generations against the model catalogue. "
        "Authenticate with `Authorization: Bearer <token>` (`python manage.py arena_token USERNAME`).",
    },
    "servers": [{"url": "/"}],
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {"Error": ERROR, "Params": PARAMS, "Model": MODEL, "Generation": GENERATION,
                    "Comparison": COMPARISON},
    },
    "security": [{"bearer": []}],
    "paths": {
        "/api/v1/models": {
            "get": {
                "operationId": "listModels",
                "summary": "The enabled catalogue models",
                "responses": {
                    "200": {"description": "The catalogue", **_json(
                        {"type": "object", "properties": {"models": {"type": "array", "items": MODEL}}}
                    )},
                    "401": _err("Missing or invalid token"),
                },
            }
        },
        "/api/v1/generations": {
            "post": {
                "operationId": "createGeneration",
                "summary": "Start a generation; poll its URL for the outcome",
                "requestBody": {"required": True, **_json({
                    "type": "object",
                    "required": ["model", "prompt"],
                    "additionalProperties": False,
                    "properties": {
                        "model": {"type": "string", "description": "A catalogue slug"},
                        "prompt": PROMPT,
                        "system_prompt": SYSTEM_PROMPT,
                        "params": PARAMS,
                        "tag": TAG,
                    },
                })},
                "responses": {
                    "202": {"description": "Accepted; the generation runs in the background", **_json(GENERATION)},
                    "400": _err("Invalid request; `fields` says which"),
                    "401": _err("Missing or invalid token"),
                    **TOO_LARGE, **LIMITED,
                },
            }
        },
        "/api/v1/generations/{id}": {
            "get": {
                "operationId": "getGeneration",
                "summary": "A generation's status, text and metrics",
                "parameters": [{"name": "id", "in": "path", "required": True,
                                "schema": {"type": "string", "format": "uuid"}}],
                "responses": {
                    "200": {"description": "The generation", **_json(GENERATION)},
                    "401": _err("Missing or invalid token"),
                    "404": _err("No such generation (or not yours)"),
                },
            }
        },
        "/api/v1/comparisons": {
            "post": {
                "operationId": "createComparison",
                "summary": "Start a comparison: two models, one prompt, both answers at once",
                "requestBody": {"required": True, **_json({
                    "type": "object",
                    "required": ["left_model", "right_model", "prompt"],
                    "additionalProperties": False,
                    "properties": {
                        "left_model": {"type": "string", "description": "A catalogue slug"},
                        "right_model": {"type": "string", "description": "A catalogue slug (may be the same)"},
                        "prompt": PROMPT,
                        "left_system_prompt": SYSTEM_PROMPT,
                        "right_system_prompt": SYSTEM_PROMPT,
                        "params": PARAMS,
                        "left_params": PARAMS,
                        "right_params": PARAMS,
                        "tag": TAG,
                    },
                })},
                "responses": {
                    "202": {"description": "Accepted; both answers run in the background", **_json(COMPARISON)},
                    "400": _err("Invalid request; `fields` says which"),
                    "401": _err("Missing or invalid token"),
                    **TOO_LARGE, **LIMITED,
                },
            }
        },
        "/api/v1/comparisons/{id}": {
            "get": {
                "operationId": "getComparison",
                "summary": "A comparison: both answers, their metrics and the verdict",
                "parameters": _ID,
                "responses": {
                    "200": {"description": "The comparison", **_json(COMPARISON)},
                    "401": _err("Missing or invalid token"),
                    "404": _err("No such comparison (or not yours)"),
                },
            }
        },
        "/api/v1/comparisons/{id}/vote": {
            "post": {
                "operationId": "voteComparison",
                "summary": "Record the verdict (a later vote replaces it)",
                "parameters": _ID,
                "requestBody": {"required": True, **_json({
                    "type": "object", "required": ["outcome"], "additionalProperties": False,
                    "properties": {"outcome": {"type": "string", "enum": OUTCOMES}},
                })},
                "responses": {
                    "200": {"description": "The comparison with its verdict", **_json(COMPARISON)},
                    "400": _err("Unknown outcome"),
                    "401": _err("Missing or invalid token"),
                    "404": _err("No such comparison (or not yours)"),
                    "409": _err("An answer is not complete yet"),
                    **TOO_LARGE,
                },
            }
        },
        "/api/v1/workers": {
            "get": {
                "operationId": "listWorkers",
                "summary": "Staff: the model workers the orchestrator runs, with memory and cold starts "
                           "(the caller's own blind contestants hidden until the reveal)",
                "responses": {
                    "200": {"description": "Nodes and workers", **_json({
                        "type": "object",
                        "properties": {
                            "orchestrator_running": {"type": "boolean"},
                            "nodes": {"type": "array", "items": {"type": "object", "properties": {
                                "node": {"type": "string"}, "budget_mb": {"type": ["number", "null"]},
                                "reserved_mb": {"type": ["number", "null"], "description": "null while the caller "
                                                "has blind matches not yet revealed (it would size their workers)"},
                                "used_pct": {"type": ["integer", "null"]},
                            }}},
                            "workers": {"type": "array", "items": {"type": "object", "properties": {
                                "worker_id": {"type": "string"}, "slug": {"type": "string"},
                                "node": {"type": "string"}, "state": {"type": "string"},
                                "reserved_mb": {"type": "number"},
                                "estimate_mb": {"type": ["number", "null"]},
                                "measured_mb": {"type": ["number", "null"]},
                                "in_flight": {"type": "integer"}, "last_used": {"type": "number"},
                                "cold_start_s": {"type": ["number", "null"]},
                                "uptime_s": {"type": ["number", "null"]},
                            }}},
                            "hidden": {
                                "type": ["object", "null"],
                                "description": "The workers of the caller's own unrevealed blind tournaments, "
                                               "left out of `workers` until the reveal, summed up without a "
                                               "name; null when none is hidden. Node totals still count them.",
                                "properties": {"label": {"type": "string"}, "workers": {"type": "integer"},
                                               "in_flight": {"type": "integer"}},
                            },
                        },
                    })},
                    "401": _err("Missing or invalid token"),
                    "403": _err("Not a staff token"),
                },
            }
        },
    },
}
