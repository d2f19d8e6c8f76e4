"""OpenAPI 3.1 path item of the workers endpoint (arena/workers/api.py)."""

from arena.api.openapi import error_response, json_content

NODE_RESOURCES = {
    "type": ["object", "null"],
    "required": ["cpus", "gpus", "memory_mb"],
    "properties": {"cpus": {"type": ["number", "null"]}, "gpus": {"type": ["number", "null"]},
                   "memory_mb": {"type": ["number", "null"]}},
}

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
                        "nodes": {"type": "array", "items": {
                            "type": "object",
                            "required": ["node", "name", "alive", "reason", "budget_mb", "reserved_mb",
                                         "resources", "in_use", "used_pct"],
                            "properties": {
                                "node": {"type": "string", "description": "The backend's node id "
                                         "(Ray's node id; \"local\" on one machine)"},
                                "name": {"type": "string", "description": "Readable: the node's address "
                                         "(\"10.0.0.7:41235\"), its Ray node name, or \"local\""},
                                "alive": {"type": "boolean", "description": "False for a node Ray lost; "
                                          "a lost node stays listed for 15 minutes"},
                                "reason": {"type": "string", "description": "Why Ray says a lost node died "
                                           "(\"received SIGTERM\"); empty while alive"},
                                "budget_mb": {"type": ["number", "null"], "description": "The memory the "
                                              "orchestrator may reserve on the node; null: unlimited"},
                                "reserved_mb": {"type": ["number", "null"], "description": "What the "
                                                "orchestrator's workers reserve on the node; null while the "
                                                "caller has blind matches not yet revealed (it would size "
                                                "their workers)"},
                                "resources": {**NODE_RESOURCES, "description": "The node's totals as Ray "
                                              "reports them; null where the backend reports none (local)"},
                                "in_use": {**NODE_RESOURCES, "description": "Totals less what Ray reports "
                                           "available; null on the local backend, and while the caller has "
                                           "blind matches not yet revealed"},
                                "used_pct": {"type": ["integer", "null"]},
                                "spares": {"type": ["array", "null"], "description": "Spare workers on the "
                                           "node (the local backend's: started ahead with an engine's "
                                           "libraries imported, no model yet; their memory is in "
                                           "reserved_mb); null while the caller has blind matches not yet "
                                           "revealed",
                                           "items": {"type": "object", "required": ["engine", "memory_mb"],
                                                     "properties": {"engine": {"type": "string"},
                                                                    "memory_mb": {"type": "number"}}}},
                            },
                        }},
                        "workers": {"type": "array", "items": {"type": "object", "properties": {
                            "worker_id": {"type": "string"}, "slug": {"type": "string"},
                            "node": {"type": "string"},
                            "node_name": {"type": "string", "description": "The readable name of the "
                                          "worker's node (its id where the node is no longer listed)"},
                            "state": {"type": "string"},
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
