"""OpenAPI 3.1 path item of GET /api/v1/categories (arena/categories/api.py)."""

from arena.api.openapi import error_response, json_content

OPENAPI_PATHS = {"/api/v1/categories": {"get": {
    "operationId": "categories",
    "summary": "The categories of prompt, their rules in the order they are tried, and the classifier's slug",
    "responses": {
        "200": {"description": "Categories and rules", **json_content({
            "type": "object", "required": ["categories", "rules", "classifier"], "properties": {
                "categories": {"type": "array", "items": {"type": "object", "properties": {
                    "id": {"type": "integer"}, "name": {"type": "string"}, "description": {"type": "string"},
                    "team": {"type": ["string", "null"], "description": "Its team's name; null: every team's"}}}},
                "rules": {"type": "array", "items": {"type": "object", "properties": {
                    "id": {"type": "integer"}, "category": {"type": "string"},
                    "kind": {"type": "string", "enum": ["keywords", "regex", "tag"]}, "value": {"type": "string"},
                    "position": {"type": "integer"}}}},
                "classifier": {"type": "string"}}})},
        "401": error_response("No valid API token"),
    },
}}}
