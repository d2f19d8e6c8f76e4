"""OpenAPI 3.1 path items of the token endpoints, assembled with the others in arena/openapi.py."""

from arena.api.openapi import TEXT, TOO_LARGE, Schema, error_response, json_content

from .models import MAX_EXPIRY_DAYS, NAME_MAX_LENGTH

_WHEN = {"type": ["string", "null"], "format": "date-time"}

TOKEN: Schema = {
    "type": "object",
    "required": ["id", "name", "hint", "state", "created_at", "last_used_at", "expires_at", "revoked_at"],
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "hint": {"type": "string", "description": "The token's first characters, to tell tokens apart"},
        "state": {"type": "string", "enum": ["active", "expired", "revoked"]},
        "created_at": {"type": "string", "format": "date-time"},
        "last_used_at": _WHEN,
        "expires_at": {**_WHEN, "description": "Refused from then on; null: never expires"},
        "revoked_at": _WHEN,
    },
}

NEW_TOKEN = {**TOKEN, "required": [*TOKEN["required"], "token"],
             "properties": {**TOKEN["properties"], "token": {
                 "type": "string", "description": "The token itself: shown in this answer only (a hash is kept)"}}}

OPENAPI_PATHS = {
    "/api/v1/tokens": {
        "get": {
            "operationId": "listTokens",
            "summary": "Your API tokens, newest first, without their secrets",
            "responses": {
                "200": {"description": "Your tokens", **json_content({
                    "type": "object", "required": ["tokens"],
                    "properties": {"tokens": {"type": "array", "items": TOKEN}}})},
                "401": error_response("Missing or invalid token"),
            },
        },
        "post": {
            "operationId": "createToken",
            "summary": "Make a new API token; the answer is the only time it is shown",
            "requestBody": {"required": True, **json_content({
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "name": {**TEXT, "type": ["string", "null"], "maxLength": NAME_MAX_LENGTH,
                             "description": f"What the token is for; at most {NAME_MAX_LENGTH} characters, "
                                            "stored with blanks trimmed; null or absent: no name"},
                    "expires_in_days": {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_EXPIRY_DAYS,
                                        "description": "Refused after this many days; null or absent: never"},
                },
            })},
            "responses": {
                "201": {"description": "Created; `token` is shown this once", **json_content(NEW_TOKEN)},
                "400": error_response("Invalid request; `fields` says which"),
                "401": error_response("Missing or invalid token"),
                **TOO_LARGE,
            },
        },
    },
    "/api/v1/tokens/{id}": {
        "delete": {
            "operationId": "revokeToken",
            "summary": "Revoke one of your tokens: refused (401) at once from then on",
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "responses": {
                "204": {"description": "Revoked (or already revoked)"},
                "401": error_response("Missing or invalid token"),
                "404": error_response("No such token (or not yours)"),
            },
        },
    },
}
