"""OpenAPI 3.1 path item of the leaderboard endpoint (arena/leaderboard/api.py)."""

from arena.api.openapi import error_response, json_content

from .records import KINDS, MODES, PERIODS

_NUMBER = {"type": "number"}
_FIGURE = {"type": ["object", "null"], "required": ["model", "label", "value", "measured"], "properties": {
    "model": {"type": "string"}, "label": {"type": "string"}, "value": _NUMBER,
    "measured": {"type": "boolean", "description": "Speed: measured alone (not beside other generations); "
                 "memory: a worker's resident figure, not the catalogue's estimate"}}}

DECISION = {
    "type": "object", "description": "What to pick, in words and figures: never a single best where more than one "
    "entry could be best",
    "required": ["contenders", "best", "margin", "top_two", "separation", "fastest", "smallest", "caveats",
                 "sentences"],
    "properties": {
        "contenders": {"type": "array", "items": {"type": "string"}, "description": "Slugs, best first: the entries "
                       "that cannot be told apart from the best (rank range includes 1st, or 95% interval overlaps "
                       "the top one's)"},
        "best": {"type": ["string", "null"], "description": "The one clear best; null where the data name none"},
        "margin": {"type": ["number", "null"], "description": "The clear best's lead in rating points"},
        "top_two": {"type": ["array", "null"], "items": {"type": "string"}},
        "separation": {"type": ["object", "null"], "description": "How many verdicts between the top two would "
                       "separate them (95% Wilson interval of their win rate leaving out 50%)", "properties": {
                           "rate": _NUMBER, "given": {"type": "integer"}, "needed": {"type": ["integer", "null"]},
                           "more": {"type": ["integer", "null"]}, "separated": {"type": "boolean"},
                           "met": {"type": "boolean", "description": "False: the rate is the one their ratings "
                                   "predict"}}},
        "fastest": _FIGURE, "smallest": _FIGURE,
        "caveats": {"type": "array", "items": {"type": "string"}},
        "sentences": {"type": "array", "items": {"type": "string"}, "description": "The summary in words, "
                      "caveats last"},
    },
}

ENTRY = {
    "type": "object",
    "required": ["model", "label", "name", "family", "variant", "rank", "rank_range", "rating", "interval",
                 "battles", "win_rate", "from_tournaments", "provisional", "provisional_floor", "rank_shown",
                 "rating_sd"],
    "properties": {
        "model": {"type": "string"}, "label": {"type": "string"}, "name": {"type": "string"},
        "family": {"type": "string", "description": "Its base model: entries serving the same weights or remote "
                   "model share it"},
        "variant": {"type": "string", "description": "How it serves that model (full precision, AWQ 4-bit, "
                    "llama.cpp Q4_1 · spec...)"},
        "rank": {"type": "integer"}, "rank_range": {"type": "string"}, "rank_best": {"type": "integer"},
        "rank_worst": {"type": "integer"}, "rating": _NUMBER,
        "interval": {"type": "array", "items": _NUMBER, "minItems": 2, "maxItems": 2},
        "battles": {"type": "integer"}, "win_rate": _NUMBER, "from_tournaments": {"type": "integer"},
        "provisional": {"type": "boolean", "description": "Rated on fewer verdicts than provisional_floor in this "
                        "view: its rating can still move a lot"},
        "provisional_floor": {"type": "integer", "description": "The verdicts an entry needs in this view to be "
                              "no longer provisional (ARENA_LEADERBOARD_PROVISIONAL_VERDICTS)"},
        "rank_shown": {"type": "string", "description": "The rank as the page shows it: the number, or 'not enough "
                       "verdicts' for a provisional entry"},
        "rating_sd": {**_NUMBER, "description": "The rating's posterior standard deviation (rating points); the "
                      "interval is rating ± 1.96 of them"},
    },
}

OPENAPI_PATHS = {
    "/api/v1/leaderboard": {
        "get": {
            "operationId": "leaderboard",
            "summary": "The leaderboard: ratings from every verdict the caller may see (or the kinds asked for), "
                       "each kind counted, families of variants, and a decision summary",
            "parameters": [
                {"name": "kind", "in": "query", "required": False, "style": "form", "explode": True,
                 "description": "Kinds of verdict, repeatable; absent or all: every kind (judges marked unreliable "
                 "left out unless unreliable=include)",
                 "schema": {"type": "array", "items": {"type": "string", "enum": [*KINDS, "all"]}}},
                {"name": "days", "in": "query", "required": False,
                 "schema": {"type": "string", "enum": list(PERIODS)}},
                {"name": "tag", "in": "query", "required": False, "schema": {"type": "string"}},
                {"name": "mode", "in": "query", "required": False, "schema": {"type": "string", "enum": list(MODES)}},
                {"name": "flagged", "in": "query", "required": False,
                 "schema": {"type": "string", "enum": ["include"]}},
                {"name": "unreliable", "in": "query", "required": False,
                 "schema": {"type": "string", "enum": ["include"]}},
                {"name": "style", "in": "query", "required": False, "schema": {"type": "string", "enum": ["1"]}},
                {"name": "group", "in": "query", "required": False, "schema": {"type": "string", "enum": ["family"]},
                 "description": "family: variants grouped under their base model"},
            ],
            "responses": {
                "200": {"description": "The board", **json_content({
                    "type": "object",
                    "required": ["filters", "verdicts", "sources", "entries", "families", "decision"],
                    "properties": {
                        "filters": {"type": "object"},
                        "verdicts": {"type": "integer", "description": "Verdicts the ratings are fitted on"},
                        "tournament_verdicts": {"type": "integer"},
                        "sources": {"type": "object", "description": "Per kind: its count in this period and tag "
                                    "(shown or not) and whether it is shown",
                                    "additionalProperties": {"type": "object", "properties": {
                                        "label": {"type": "string"}, "count": {"type": "integer"},
                                        "shown": {"type": "boolean"}}}},
                        "flagged_left_out": {"type": "integer"},
                        "unreliable_left_out": {"type": "integer"},
                        "entries": {"type": "array", "items": ENTRY},
                        "families": {"type": "array", "items": {"type": "object", "properties": {
                            "family": {"type": "string"}, "name": {"type": "string"},
                            "models": {"type": "array", "items": {"type": "string"}}}}},
                        "decision": DECISION,
                    },
                })},
                "400": error_response("A filter with a value it does not take; `fields` says which"),
                "401": error_response("No valid API token"),
            },
        },
    },
}

_INTERVAL = {"type": "array", "items": _NUMBER, "minItems": 2, "maxItems": 2}
_CELL = {"type": "object", "required": ["model", "label", "rating", "interval", "verdicts", "win_rate",
                                        "win_rate_interval"],
         "properties": {"model": {"type": "string"}, "label": {"type": "string"}, "rating": _NUMBER,
                        "interval": {**_INTERVAL, "description": "The rating's 95% interval"},
                        "verdicts": {"type": "integer"}, "wins": _NUMBER, "win_rate": _NUMBER,
                        "win_rate_interval": {**_INTERVAL, "description": "The win rate's 95% Wilson interval"},
                        "enough_verdicts": {"type": "boolean"}, "rank_shown": {"type": "string"}}}
_FILTERS = OPENAPI_PATHS["/api/v1/leaderboard"]["get"]["parameters"]
OPENAPI_PATHS["/api/v1/leaderboard/categories"] = {"get": {
    "operationId": "leaderboardByCategory",
    "summary": "Each category of prompt's ratings (the leaderboard's fit on that category's verdicts): rating and "
               "win rate with their 95% intervals, verdicts, and whether they are enough",
    "parameters": _FILTERS,
    "responses": {
        "200": {"description": "One entry per category; name null: verdicts whose prompt has no category",
                **json_content({"type": "object", "required": ["categories", "provisional_floor"], "properties": {
                    "categories": {"type": "array", "items": {"type": "object", "properties": {
                        "name": {"type": ["string", "null"]}, "verdicts": {"type": "integer"},
                        "entries": {"type": "array", "items": _CELL}}}},
                    "provisional_floor": {"type": "integer"},
                    "classifying": {"type": "integer", "description": "Prompts the classifier is still reading"}}})},
        "400": error_response("A filter with a value it does not take; `fields` says which"),
        "401": error_response("No valid API token"),
    },
}}
OPENAPI_PATHS["/api/v1/leaderboard/similar"] = {"post": {
    "operationId": "leaderboardSimilarPrompts",
    "summary": "Prompts like this one: the ranking fitted on the verdicts whose prompts are most like the one "
               "given (a text similarity, named in `similarity`), with intervals and how many verdicts it used",
    "parameters": _FILTERS,
    "requestBody": {"required": True, **json_content({"type": "object", "required": ["prompt"],  # type: ignore[dict-item]
                                                      "additionalProperties": False,
                                                      "properties": {"prompt": {"type": "string", "minLength": 1,
                                                                                "maxLength": 20_000}}})},
    "responses": {
        "200": {"description": "The ranking", **json_content({
            "type": "object", "required": ["similarity", "verdicts", "entries"], "properties": {
                "similarity": {"type": "string"}, "verdicts": {"type": "integer"}, "prompts": {"type": "integer"},
                "pool": {"type": "integer"}, "similarity_range": {"type": ["array", "null"], "items": _NUMBER},
                "provisional_floor": {"type": "integer"}, "entries": {"type": "array", "items": _CELL}}})},
        "400": error_response("No prompt, or one too long"),
        "401": error_response("No valid API token"),
    },
}}
