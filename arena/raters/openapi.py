"""OpenAPI 3.1 path item of GET /api/v1/suite-runs/{id}/raters (arena/raters/api.py)."""

from arena.api.openapi import UUID_ID, error_response, json_content

from .models import ACTIVE, CAPPED, DONE, EXPIRED, REVOKED

NUMBER_OR_NULL = {"type": ["number", "null"]}
LINK = {"type": "object", "required": ["id", "name", "verdicts", "cap", "state", "created_at", "expires_at"],
        "properties": {
            "id": {"type": "integer"}, "name": {"type": "string"},
            "verdicts": {"type": "integer", "description": "Verdicts given through the link so far"},
            "cap": {"type": "integer", "description": "The most verdicts it may give"},
            "state": {"type": "string", "enum": [ACTIVE, DONE, CAPPED, EXPIRED, REVOKED],
                      "description": "active: it takes verdicts; otherwise why not (its verdicts then name the "
                                     "models in the run's export)"},
            "created_at": {"type": "string", "format": "date-time"},
            "expires_at": {"type": "string", "format": "date-time"}}}
AGREEMENT = {"type": ["object", "null"], "description": "null: fewer than two raters gave verdicts",
             "required": ["method", "raters", "shared_pairs", "kappa", "low", "high", "min_shared_pairs"],
             "properties": {
                 "method": {"type": "string", "enum": ["cohen", "fleiss"]},
                 "raters": {"type": "integer"},
                 "shared_pairs": {"type": "integer", "description": "Pairs judged by two raters or more"},
                 "kappa": {**NUMBER_OR_NULL, "description": "null: fewer shared pairs than min_shared_pairs, or "
                                                            "every shared verdict in one category"},
                 "low": {**NUMBER_OR_NULL, "description": "95% interval, a bootstrap over pairs"},
                 "high": NUMBER_OR_NULL,
                 "min_shared_pairs": {"type": "integer"}}}

OPENAPI_PATHS = {"/api/v1/suite-runs/{id}/raters": {"get": {
    "operationId": "getSuiteRunRaters",
    "summary": "A suite run's rater links (names, verdicts, states; never a token) and the raters' agreement",
    "parameters": UUID_ID,
    "responses": {
        "200": {"description": "The links in their order, and kappa between their raters", **json_content({
            "type": "object", "required": ["links", "agreement"],
            "properties": {"links": {"type": "array", "items": LINK}, "agreement": AGREEMENT}})},
        "401": error_response("Missing or invalid token"),
        "404": error_response("No such suite run (or not yours)"),
    },
}}}
