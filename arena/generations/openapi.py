"""OpenAPI 3.1 schemas of a generation, as the API shows it (the playground's endpoints,
arena/playground/openapi.py) and as comparisons, tournaments and exports show its parts."""

from arena.api.openapi import PARAMS, TAG, WHOSE

from .status import FINISH_REASON_SCHEMA

FINISH_REASON = FINISH_REASON_SCHEMA
TTFT_TEXT = ("Seconds from when the model's worker began the answer to its first token: neither the wait in line "
             "nor the model's load (load_wait_s, queue_wait_s)")
LOAD_TEXT = "Seconds waiting for a worker to be ready: the model's load on a cold start, about 0 when warm"
QUEUE_TEXT = "Seconds waiting in line for a free slot (the fair line, then the worker's own queue)"

OUTPUT_VALID = {"type": ["boolean", "null"],
                "description": "Whether the finished answer follows params.json_schema or params.regex; null when "
                               "it had neither or has not finished"}

CACHED = {"type": "boolean", "description": "Reused, not generated: the stored answer of an identical earlier greedy "
                                           "or seeded request (same model and version, prompt and parameters); its "
                                           "token counts and speeds are that request's"}
CACHED_FROM = {"type": ["string", "null"], "format": "uuid",
               "description": "The generation whose answer was reused; null when cached is false"}

GENERATION: dict = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        **WHOSE,
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
        "cached": CACHED,
        "cached_from": CACHED_FROM,
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
