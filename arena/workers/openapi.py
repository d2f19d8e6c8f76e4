"""OpenAPI 3.1 path item of the workers endpoint (arena/workers/api.py)."""

from arena.api.openapi import error_response, json_content

OPENAPI_PATHS = {
    "/api/v1/workers": {
        "get": {
            "operationId": "listWorkers",
            "summary": "Staff: the model workers the orchestrator runs, with memory and cold starts "
                       "(the caller's own blind contestants hidden until the reveal)",
            "responses": {
                "200": {"description": "Nodes and workers", **json_content({
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
                "401": error_response("Missing or invalid token"),
                "403": error_response("Not a staff token"),
            },
        }
    },
}
