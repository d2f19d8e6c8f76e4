"""OpenAPI 3.1 path items of the generation endpoints (arena/playground/api.py)."""

from arena.api.openapi import (
    LIMITED,
    PARAMS,
    PROMPT,
    SYSTEM_PROMPT,
    TAG,
    TOO_LARGE,
    UUID_ID,
    error_response,
    json_content,
)
from arena.generations.openapi import GENERATION

OPENAPI_PATHS = {
    "/api/v1/generations": {
        "post": {
            "operationId": "createGeneration",
            "summary": "Start a generation; poll its URL for the outcome",
            "requestBody": {"required": True, **json_content({
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
                "202": {"description": "Accepted; the generation runs in the background", **json_content(GENERATION)},
                "400": error_response("Invalid request; `fields` says which"),
                "401": error_response("Missing or invalid token"),
                **TOO_LARGE, **LIMITED,
            },
        }
    },
    "/api/v1/generations/{id}": {
        "get": {
            "operationId": "getGeneration",
            "summary": "A generation's status, text and metrics",
            "parameters": UUID_ID,
            "responses": {
                "200": {"description": "The generation", **json_content(GENERATION)},
                "401": error_response("Missing or invalid token"),
                "404": error_response("No such generation (or neither yours nor your team's)"),
            },
        }
    },
}
