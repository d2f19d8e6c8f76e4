"""OpenAPI 3.1 path items of the export endpoints, assembled with the others in arena/openapi.py."""

from arena.api.openapi import ERROR, WHOSE, Schema
from arena.generations.openapi import CACHED, CACHED_FROM, FINISH_REASON, LOAD_TEXT, QUEUE_TEXT, TTFT_TEXT

_FILTERS = [
    {"name": "format", "in": "query", "required": False,
     "schema": {"type": "string", "enum": ["json", "csv"], "default": "json"}},
    {"name": "q", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "Words that must all appear (case-insensitive) in the prompt or a system prompt; "
     "\"a phrase\" in double quotes stays whole"},
    {"name": "tag", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "Only rows with this prompt tag (e.g. coding)"},
    {"name": "scope", "in": "query", "required": False,
     "schema": {"type": "string", "enum": ["mine", "team", ""], "default": "mine"},
     "description": ("mine: your own rows; team: every member's in the team you work in now (your current "
                     "team), yours included: none when you are in no team. Another value: 400")},
]

# Whose a row is (every export's rows).
_WHOSE: Schema = {
    **WHOSE,
}

_SIDE: Schema = {
    "type": "object",
    "properties": {
        "generation_id": {"type": "string", "format": "uuid"},
        "model": {"type": "string", "description": "Catalogue slug"},
        "model_name": {"type": "string"},
        "system_prompt": {"type": "string"},
        "params": {"type": "object"},
        "status": {"type": "string"},
        "text": {"type": "string"},
        "finish_reason": FINISH_REASON,
        "failure_reason": {"type": "string"},
        "prompt_tokens": {"type": ["integer", "null"]},
        "generated_tokens": {"type": ["integer", "null"]},
        "time_to_first_token_s": {"type": ["number", "null"], "description": TTFT_TEXT},
        "tokens_per_s": {"type": ["number", "null"]},
        "load_wait_s": {"type": ["number", "null"], "description": LOAD_TEXT},
        "queue_wait_s": {"type": ["number", "null"], "description": QUEUE_TEXT},
        "cached": CACHED,
        "cached_from": CACHED_FROM,
    },
}

BATTLE_ROW = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "created_at": {"type": "string", "format": "date-time"},
        **_WHOSE,
        "mode": {"type": "string", "enum": ["comparison", "tournament", "suite", "anonymous"]},
        "blind": {"type": "boolean"},
        "tag": {"type": "string", "description": "The prompt tag, or empty"},
        "category": {"type": ["string", "null"],
                     "description": "The prompt's category (its own, else its suite prompt's), or null"},
        "prompt": {"type": "string"},
        "history": {"type": "array", "items": {"type": "object"}},
        "outcome": {"type": ["string", "null"], "enum": ["left", "right", "tie", "both_bad", None]},
        "winner_model": {"type": ["string", "null"], "description": "The slug of the side that won, if one did"},
        "judge": {"type": ["string", "null"],
                  "description": "The slug of the model judge whose verdict this is; null: a person's verdict"},
        "jury": {"type": ["array", "null"], "items": {"type": "string"},
                 "description": "The slugs of every judge who read the pair (a jury's seats, first seat first; "
                                "one for a single judge); null: a person's verdict"},
        "orders_agree": {"type": ["boolean", "null"],
                         "description": ("Whether the model judge said the same with each answer shown first; "
                                         "false: the pair is a tie because its two orders disagreed")},
        "tie_reason": {"type": ["string", "null"], "description": "Why a judged pair is a tie it did not say"},
        "judgements": {"type": ["array", "null"], "items": {"type": "object"},
                       "description": ("A model judge's two readings, one per order shown: order, raw text, and "
                                       "verdict in the battle's left/right terms")},
        "voted_at": {"type": ["string", "null"], "format": "date-time"},
        "reasons": {"type": ["array", "null"], "items": {"type": "string"},
                    "description": "A person's reason slugs with the verdict, where the names show"},
        "comment": {"type": ["string", "null"], "description": "A person's comment with the verdict"},
        "rater_name": {"type": ["string", "null"],
                       "description": "A suite pair judged through a rater link: the link's name then; else null"},
        "self_identified": {"type": "boolean"},
        "parent_id": {"type": ["string", "null"]},
        "tournament_id": {"type": ["string", "null"]},
        "left": _SIDE,
        "right": _SIDE,
        "permalink": {"type": "string", "format": "uri"},
    },
}

GENERATION_ROW = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "created_at": {"type": "string", "format": "date-time"},
        **_WHOSE,
        "origin": {"type": "string", "enum": ["web", "api"]},
        "tag": {"type": "string", "description": "The prompt tag, or empty"},
        "prompt": {"type": "string"},
        "history": {"type": "array", "items": {"type": "object"}},
        # the answer's own fields, as in a battle's side (export.generation_record builds it so)
        **{name: schema for name, schema in _SIDE["properties"].items() if name != "generation_id"},
        "finished_at": {"type": ["string", "null"], "format": "date-time"},
        "permalink": {"type": "string", "format": "uri"},
    },
}


def _export(dataset: str, row: dict) -> dict:
    return {
        "type": "object",
        "required": ["dataset", "exported_at", "filters", "rows"],
        "properties": {
            "dataset": {"type": "string", "const": dataset},
            "exported_at": {"type": "string", "format": "date-time"},
            "filters": {"type": "object", "description": "The filters applied"},
            "rows": {"type": "array", "items": row},
        },
    }


def _responses(dataset: str, row: dict, csv_note: str) -> dict:
    return {
        "200": {"description": "The export, newest first, streamed as an attachment", "content": {
            "application/json": {"schema": _export(dataset, row)},
            "text/csv": {"schema": {"type": "string", "description": csv_note}},
        }},
        "400": {"description": "Unknown format, scope (or battles mode)",
                "content": {"application/json": {"schema": ERROR}}},
        "401": {"description": "Missing or invalid token", "content": {"application/json": {"schema": ERROR}}},
    }


_CSV = ("One row per {}, a header row first; each side's fields prefixed left_/right_, params and history "
        "as JSON. A cell starting with = + - @, a tab or a carriage return gets a leading apostrophe (so a "
        "spreadsheet does not run it as a formula).")

OPENAPI_PATHS = {
    "/api/v1/export/battles": {
        "get": {
            "operationId": "exportBattles",
            "summary": "Your battles (comparisons, anonymous battles once judged, tournament matches once their "
            "tournament revealed them, suite-run pairs) "
            "with both answers, metrics and verdicts. Blind battles not yet revealed are left out.",
            "parameters": [*_FILTERS, {"name": "mode", "in": "query", "required": False,
                                       "description": ("Only comparisons, tournament matches, suite pairs or "
                                                       "anonymous battles; empty: all"),
                                       "schema": {"type": "string",
                                                  "enum": ["comparison", "tournament", "suite", "anonymous", ""]}}],
            "responses": _responses("battles", BATTLE_ROW, _CSV.format("battle")),
        }
    },
    "/api/v1/export/generations": {
        "get": {
            "operationId": "exportGenerations",
            "summary": "Your playground and API generations (a battle's answers are in the battles export)",
            "parameters": _FILTERS,
            "responses": _responses("generations", GENERATION_ROW, _CSV.format("generation")),
        }
    },
}
