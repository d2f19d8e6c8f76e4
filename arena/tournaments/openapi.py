"""OpenAPI 3.1 path items of the tournament endpoints, assembled with the others in arena/openapi.py."""

from arena.api.openapi import ERROR, LIMITED, PARAMS, PROMPT, SYSTEM_PROMPT, TAG, TEXT, TOO_LARGE, UUID_ID, WHOSE
from arena.battles.openapi import NOTE_SHOWN, READ_ONLY, VOTE_NOTE
from arena.generations.openapi import FINISH_REASON, LOAD_TEXT, QUEUE_TEXT, TTFT_TEXT
from arena.leaderboard.openapi import DECISION

from .models import BLIND_MIN_TEMPERATURE, BLIND_MIN_TOP_P

_SAMPLING = PARAMS["properties"]
BLIND_PARAMS = {
    **PARAMS,
    "description": "Sampling for every match over each contestant's defaults: no seed (each side of each match "
                   f"draws its own), temperature at least {BLIND_MIN_TEMPERATURE} and top_p at least "
                   f"{BLIND_MIN_TOP_P}, so a blind answer cannot be replayed in the playground to tell its model.",
    "properties": {
        **{name: schema for name, schema in _SAMPLING.items() if name != "seed"},
        "temperature": {**_SAMPLING["temperature"], "minimum": BLIND_MIN_TEMPERATURE},
        "top_p": {**_SAMPLING["top_p"], "minimum": BLIND_MIN_TOP_P},
    },
}

_STATUS = {"type": "string", "enum": ["queued", "loading", "running", "done", "failed", "cancelled"]}

SIDE = {
    "type": "object",
    "description": "One side of a match's battle. Before the reveal: only `label`, `status` and `text` "
    "(nothing names or times the contestant). After it: the model, its failure reason and speeds.",
    "required": ["label", "status", "text"],
    "properties": {
        "label": {"type": "string", "enum": ["Model A", "Model B"]},
        "status": _STATUS,
        "text": {"type": "string"},
        "model": {"type": "string", "description": "After the reveal: the catalogue slug"},
        "name": {"type": "string", "description": "After the reveal"},
        "failure_reason": {"type": "string", "description": "After the reveal"},
        "finish_reason": FINISH_REASON,
        "time_to_first_token_s": {"type": ["number", "null"], "description": "After the reveal. " + TTFT_TEXT},
        "load_wait_s": {"type": ["number", "null"], "description": "After the reveal. " + LOAD_TEXT},
        "queue_wait_s": {"type": ["number", "null"], "description": "After the reveal. " + QUEUE_TEXT},
        "tokens_per_s": {"type": ["number", "null"], "description": "After the reveal"},
        "generated_tokens": {"type": ["integer", "null"], "description": "After the reveal"},
    },
}

MATCH = {
    "type": "object",
    "required": ["id", "number", "round", "index", "state", "left_slot", "right_slot", "battle"],
    "properties": {
        "id": {"type": "integer", "description": "Send it as `match` to post a winner"},
        "number": {"type": "integer", "description": "Playing order, from 1"},
        "round": {"type": "integer"},
        "index": {"type": "integer", "description": "Position in the round, top to bottom"},
        "state": {"type": "string", "enum": ["waiting", "current", "decided"]},
        "left_slot": {"type": "string", "description": "Neutral label: 'Contestant 3' or 'Winner of match 1'"},
        "right_slot": {"type": "string"},
        "battle": {"type": ["object", "null"], "properties": {
            "id": {"type": "string", "format": "uuid"},
            "url": {"type": "string"},
            "left": SIDE,
            "right": SIDE,
            "self_identified": {"type": "boolean", "description": "After the reveal: an answer named its model"},
            **NOTE_SHOWN,
        }},
        "left_model": {"type": ["string", "null"], "description": "After the reveal: the slot's slug"},
        "right_model": {"type": ["string", "null"], "description": "After the reveal"},
        "winner": {"type": ["string", "null"], "description": "After the reveal: the winner's slug"},
    },
}

TOURNAMENT = {
    "type": "object",
    "description": "A tournament's state. Blind until `state` is `finished`: no contestant is named, "
    "no slot says who won and no speed is given; then `winner`, `contestants` and every match's models "
    "and speeds appear.",
    "required": ["id", "state", "size", "seeding", "prompt", "matches", "current_match", "url"],
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        **WHOSE,
        "state": {"type": "string", "enum": ["running", "stopped", "finished"]},
        "size": {"type": "integer", "enum": [4, 8]},
        "seeding": {"type": "string", "enum": ["random", "given"]},
        "tag": TAG,
        "prompt": {"type": "string"},
        "system_prompt": {"type": "string"},
        "history": {"type": "array", "items": {"type": "object"}},
        "params": PARAMS,
        "parent": {"type": ["string", "null"], "description": "The tournament this one replays"},
        "created_at": {"type": "string", "format": "date-time"},
        "finished_at": {"type": ["string", "null"], "format": "date-time"},
        "current_match": {"type": ["integer", "null"], "description": "The id of the match to judge next"},
        "url": {"type": "string"},
        "matches": {"type": "array", "items": MATCH},
        "winner": {"type": ["object", "null"], "description": "After the reveal", "properties": {
            "slug": {"type": "string"}, "name": {"type": "string"}}},
        "contestants": {"type": "array", "description": "After the reveal, in seed order", "items": {
            "type": "object", "properties": {"seed": {"type": "integer"}, "slug": {"type": "string"},
                                             "name": {"type": "string"}}}},
        "decision": {**DECISION, "type": ["object", "null"], "description": "After the reveal: what to pick from "
                     "the bracket's matches, one verdict each (as the leaderboard's decision); it says first how "
                     "few verdicts one bracket gives"},
    },
}


def json_content(schema):
    return {"content": {"application/json": {"schema": schema}}}


def error_response(description):
    return {"description": description, **json_content(ERROR)}



OPENAPI_PATHS = {
    "/api/v1/tournaments": {
        "post": {
            "operationId": "createTournament",
            "summary": "Seed a knockout bracket of 4 or 8 contestants and start its first blind match",
            "requestBody": {"required": True, **json_content({
                "type": "object",
                "required": ["contestants", "prompt"],
                "additionalProperties": False,
                "properties": {
                    "contestants": {"type": "array", "uniqueItems": True, "items": {"type": "string"},
                                    "anyOf": [{"minItems": 4, "maxItems": 4}, {"minItems": 8, "maxItems": 8}],
                                    "description": "4 or 8 distinct enabled catalogue slugs, in seed order"},
                    "prompt": PROMPT,
                    "system_prompt": {**SYSTEM_PROMPT, "description": "Empty: each contestant's own; "
                                      + SYSTEM_PROMPT["description"]},
                    "history": {"type": "array", "description": "Earlier turns of a chat", "items": {
                        "type": "object", "required": ["role", "content"], "additionalProperties": False,
                        "properties": {"role": {"type": "string", "enum": ["user", "assistant"]},
                                       "content": TEXT}}},
                    "params": BLIND_PARAMS,
                    "tag": TAG,
                    "seeding": {"type": "string", "enum": ["random", "given"], "default": "random",
                                "description": "given: round 1 pairs seeds 1 v 4, 2 v 3 "
                                               "(8: 1 v 8, 4 v 5, 2 v 7, 3 v 6)"},
                },
            })},
            "responses": {
                "201": {"description": "Created; match 1 runs in the background", **json_content(TOURNAMENT)},
                "400": error_response("Invalid request (not 4 or 8 contestants, duplicates, unknown slug, bad params, "
                            "a seed or near-greedy sampling, "
                            "a conversation longer than ARENA_MAX_PROMPT_CHARS in all)"),
                "401": error_response("Missing or invalid token"),
                **TOO_LARGE, **LIMITED,
            },
        }
    },
    "/api/v1/tournaments/{id}": {
        "get": {
            "operationId": "getTournament",
            "summary": "A tournament's bracket and current match (neutral labels until the reveal)",
            "parameters": UUID_ID,
            "responses": {
                "200": {"description": "The tournament", **json_content(TOURNAMENT)},
                "401": error_response("Missing or invalid token"),
                "404": error_response("No such tournament (or neither yours nor your team's)"),
            },
        }
    },
    "/api/v1/tournaments/{id}/winner": {
        "post": {
            "operationId": "pickTournamentWinner",
            "summary": "The winner of the current match (a side of its battle): it advances, the next match starts, "
            "or the tournament ends and is revealed",
            "parameters": UUID_ID,
            "requestBody": {"required": True, **json_content({
                "type": "object", "required": ["match", "winner"], "additionalProperties": False,
                "properties": {
                    "match": {"type": "integer"},
                    "winner": {"type": "string", "enum": ["left", "right"]},
                    "battle": {"type": "string", "format": "uuid",
                               "description": "Optional: refuse if the match was re-run since"},
                    **VOTE_NOTE,
                },
            })},
            "responses": {
                "200": {"description": "The tournament after the pick", **json_content(TOURNAMENT)},
                "400": error_response("Invalid request"),
                "401": error_response("Missing or invalid token"),
                **READ_ONLY,
                "404": error_response("No such tournament or match"),
                "409": error_response("Not now: the answers are not complete, the match is decided or not current, "
                            "or the tournament is stopped or finished"),
                **TOO_LARGE, **LIMITED,
            },
        }
    },
    "/api/v1/tournaments/{id}/rerun": {
        "post": {
            "operationId": "rerunTournamentMatch",
            "summary": "Run the current match again (can't decide, or an answer failed)",
            "parameters": UUID_ID,
            "requestBody": {"required": True, **json_content({
                "type": "object", "required": ["match"], "additionalProperties": False,
                "properties": {"match": {"type": "integer"}}})},
            "responses": {
                "200": {"description": "The tournament with the match's new battle", **json_content(TOURNAMENT)},
                "400": error_response("Invalid request"),
                "401": error_response("Missing or invalid token"),
                **READ_ONLY,
                "404": error_response("No such tournament or match"),
                "409": error_response("Not the current match, or the tournament is not running"),
                **TOO_LARGE, **LIMITED,
            },
        }
    },
}
