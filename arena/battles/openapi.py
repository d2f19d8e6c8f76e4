"""OpenAPI 3.1 schemas and path items of the comparison and anonymous battle endpoints
(arena/battles/api.py)."""

from typing import Any

from arena.api.openapi import (
    LIMITED,
    PARAMS,
    PROMPT,
    SYSTEM_PROMPT,
    TAG,
    TOO_LARGE,
    UUID_ID,
    WHOSE,
    error_response,
    json_content,
)
from arena.generations.openapi import FINISH_REASON, GENERATION, OUTPUT_VALID

# A write on a teammate's object: its team's members read it, only its owner and staff change it (arena/access.py).
READ_ONLY = {"403": error_response("A teammate's (code read_only): you read it, only its owner and staff change it")}

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

# A vote's optional note (arena/battles/voting.py clean_note): every vote endpoint takes it.
VOTE_NOTE = {
    "comment": {"type": "string", "maxLength": 500,
                "description": "Optional: why, in at most 500 characters (a line end counts as one)"},
    "reasons": {"type": "array", "items": {"type": "string"},
                "description": "Optional: reason slugs from the list staff keep (an unknown one: 400 unknown_reason)"},
}
# The note as a battle's body gives it: with the verdict, where the names show, else null.
NOTE_SHOWN = {
    "reasons": {"type": ["array", "null"], "items": {"type": "string"},
                "description": "The verdict's reason slugs (null before a blind item's reveal, or with no verdict)"},
    "comment": {"type": ["string", "null"], "description": "The verdict's comment (null as reasons)"},
}

COMPARISON: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        **WHOSE,
        "mode": {"type": "string", "enum": ["comparison", "tournament", "anonymous"]},
        "blind": {"type": "boolean"},
        "tag": TAG,
        "prompt": {"type": "string"},
        "history": {"type": "array", "items": {"type": "object"}},
        "left": SIDE,
        "right": SIDE,
        "finished": {"type": "boolean"},
        "outcome": {"type": ["string", "null"], "enum": [*OUTCOMES, None]},
        **NOTE_SHOWN,
        "self_identified": {"type": ["boolean", "null"]},
        "category": {"type": ["string", "null"], "description": "Its prompt's category (arena/categories); null: none"},
        "parent": {"type": ["string", "null"]},
        "created_at": {"type": "string", "format": "date-time"},
        "url": {"type": "string"},
    },
}


OPENAPI_PATHS = {
    "/api/v1/comparisons": {
        "post": {
            "operationId": "createComparison",
            "summary": "Start a comparison: two models, one prompt, both answers at once",
            "requestBody": {"required": True, **json_content({
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
                "202": {"description": "Accepted; both answers run in the background", **json_content(COMPARISON)},
                "400": error_response("Invalid request; `fields` says which"),
                "401": error_response("Missing or invalid token"),
                **TOO_LARGE, **LIMITED,
            },
        }
    },
    "/api/v1/comparisons/{id}": {
        "get": {
            "operationId": "getComparison",
            "summary": "A comparison: both answers, their metrics and the verdict",
            "parameters": UUID_ID,
            "responses": {
                "200": {"description": "The comparison", **json_content(COMPARISON)},
                "401": error_response("Missing or invalid token"),
                "404": error_response("No such comparison (or neither yours nor your team's)"),
            },
        }
    },
    "/api/v1/comparisons/{id}/vote": {
        "post": {
            "operationId": "voteComparison",
            "summary": "Record the verdict (a later vote replaces it)",
            "parameters": UUID_ID,
            "requestBody": {"required": True, **json_content({
                "type": "object", "required": ["outcome"], "additionalProperties": False,
                "properties": {"outcome": {"type": "string", "enum": OUTCOMES}, **VOTE_NOTE},
            })},
            "responses": {
                "200": {"description": "The comparison with its verdict", **json_content(COMPARISON)},
                "400": error_response("Unknown outcome, an unknown reason or a comment too long"),
                "401": error_response("Missing or invalid token"),
                **READ_ONLY,
                "404": error_response("No such comparison (or neither yours nor your team's)"),
                "409": error_response("An answer is not complete yet"),
                **TOO_LARGE,
            },
        }
    },
}

ANONYMOUS_BATTLE = {
    "type": "object",
    "description": "An anonymous battle: the app drew the pair. Blind until the vote (the sides carry no model, "
                   "no parameters, no speeds); the vote's answer names both and says why the pair was drawn.",
    "properties": {
        **COMPARISON["properties"],
        "pick_reason": {"type": ["string", "null"], "enum": ["random", "least_settled", "", None],
                        "description": "Why the draw chose this pair (null until the vote)"},
        "pick_reason_text": {"type": ["string", "null"]},
        "can_vote": {"type": "boolean",
                     "description": "Both answers are out and it is not judged yet (false to a teammate)"},
        "can_continue": {"type": "boolean",
                         "description": "Not judged, both answers stored: a next turn may follow (false to teammates)"},
        "max_new_tokens": {"type": ["integer", "null"],
                           "description": "The one token limit both answers were given (the request's, else "
                                          "ARENA_BLIND_MAX_NEW_TOKENS); null for a battle from before the rule"},
    },
}

ARENA_PATHS: dict[str, Any] = {  # the anonymous battles' endpoints
    "/api/v1/arena": {
        "post": {
            "operationId": "createAnonymousBattle",
            "summary": "Start an anonymous battle: the app draws two models (arena/battles/draw.py), both blind",
            "requestBody": {"required": True, **json_content({
                "type": "object", "required": ["prompt"], "additionalProperties": False,
                "properties": {
                    "prompt": PROMPT,
                    # Both sides get it; null or absent: ARENA_BLIND_MAX_NEW_TOKENS (256), never an entry's own.
                    "max_new_tokens": PARAMS["properties"]["max_new_tokens"],
                    "tag": TAG,
                },
            })},
            "responses": {
                "202": {"description": "Accepted; both answers run in the background",
                        **json_content(ANONYMOUS_BATTLE)},
                "400": error_response("Invalid request; `fields` says which"),
                "401": error_response("Missing or invalid token"),
                "409": error_response("No two catalogue models can meet now"),
                **TOO_LARGE, **LIMITED,
            },
        }
    },
    "/api/v1/arena/{id}": {
        "get": {
            "operationId": "getAnonymousBattle",
            "summary": "An anonymous battle: both answers (paced while blind), the verdict, the names once judged",
            "parameters": UUID_ID,
            "responses": {
                "200": {"description": "The battle", **json_content(ANONYMOUS_BATTLE)},
                "401": error_response("Missing or invalid token"),
                "404": error_response("No such anonymous battle (or neither yours nor your team's)"),
            },
        }
    },
    "/api/v1/arena/{id}/vote": {
        "post": {
            "operationId": "voteAnonymousBattle",
            "summary": "Record the verdict once; the answer reveals both models, their speeds and the pick's reason",
            "parameters": UUID_ID,
            "requestBody": {"required": True, **json_content({
                "type": "object", "required": ["outcome"], "additionalProperties": False,
                "properties": {"outcome": {"type": "string", "enum": OUTCOMES}, **VOTE_NOTE},
            })},
            "responses": {
                "200": {"description": "The battle, judged and named", **json_content(ANONYMOUS_BATTLE)},
                "400": error_response("Unknown outcome, an unknown reason or a comment too long"),
                "401": error_response("Missing or invalid token"),
                **READ_ONLY,
                "404": error_response("No such anonymous battle (or neither yours nor your team's)"),
                "409": error_response("An answer is not complete yet, the battle is judged already, or it went on"),
                **TOO_LARGE,
            },
        }
    },
    "/api/v1/arena/{id}/continue": {
        "post": {
            "operationId": "continueAnonymousBattle",
            "summary": "The next turn of an unjudged anonymous battle: the same two models, still blind",
            "parameters": UUID_ID,
            "requestBody": {"required": True, **json_content({
                "type": "object", "required": ["prompt"], "additionalProperties": False,
                "properties": {"prompt": PROMPT},
            })},
            "responses": {
                "202": {"description": "Accepted; the next turn's answers run", **json_content(ANONYMOUS_BATTLE)},
                "400": error_response("Invalid request, or the conversation would be too long"),
                "401": error_response("Missing or invalid token"),
                **READ_ONLY,
                "404": error_response("No such anonymous battle (or neither yours nor your team's)"),
                "409": error_response("Judged already, or an answer is not complete yet"),
                **TOO_LARGE, **LIMITED,
            },
        }
    },
}
OPENAPI_PATHS.update(ARENA_PATHS)
