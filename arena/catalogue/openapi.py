"""OpenAPI 3.1 schemas and path items of the catalogue endpoints (arena/catalogue/api.py): the
models anyone may use (MODELS_PATHS) and the staff catalogue (OPENAPI_PATHS)."""

from arena.api.openapi import PARAMS, TOO_LARGE, error_response, json_content

from .labels import MAX_LABEL
from .models import (
    MAX_ALIAS_LENGTH,
    MAX_ALIASES,
    MAX_CPUS,
    MAX_GPUS,
    PROMPT_FORM_CHAT,
    PROMPT_FORM_TEXT,
    ModelEntry,
)
from .pricing import MAX_PRICE

BASE_MEANS = ("A base model: a pretrained (not instruction-tuned) model given the prompt as plain text to continue, "
              "never a chat template, so it continues a question rather than answering it; it stays out of "
              "anonymous battles unless in_chat_draws")

MODEL = {
    "type": "object",
    "properties": {
        "slug": {"type": "string"},
        "name": {"type": "string"},
        "description": {"type": "string"},
        "engine": {"type": "string", "enum": ["transformers", "llamacpp", "openai", "server"],
                   "description": "Who runs the model: this app's transformers worker, llama.cpp on a GGUF file, "
                                  "an OpenAI-compatible endpoint, or a server started from a command"},
        "kind": {"type": "string", "enum": ["full", "awq", "speculative"]},
        "base": {"type": "boolean", "description": BASE_MEANS},
        "prompt_form": {"type": "string", "enum": [PROMPT_FORM_CHAT, PROMPT_FORM_TEXT],
                        "description": "How the model gets a prompt: its chat template, or (a base model) plain text"},
        "precision": {"type": "string"},
        "default_params": PARAMS,
    },
}

MODELS_PATHS = {
    "/api/v1/models": {
        "get": {
            "operationId": "listModels",
            "summary": "The enabled catalogue models",
            "responses": {
                "200": {"description": "The catalogue", **json_content(
                    {"type": "object", "properties": {"models": {"type": "array", "items": MODEL}}}
                )},
                "401": error_response("Missing or invalid token"),
            },
        }
    },
}

_STR = {"type": "string"}
ENTRY_FIELDS = {
    "slug": {"type": "string", "pattern": r"^[-a-zA-Z0-9_]+$", "maxLength": 80},
    "name": {"type": "string", "maxLength": 120},
    "label": {"type": "string", "maxLength": MAX_LABEL,
              "description": "A short name that tells the entry apart in charts and tables; no two entries share "
                             "one. Empty: derived from the name and how the entry is served"},
    "description": _STR,
    "engine": {"type": "string", "enum": list(ModelEntry.Engine.values),
               "description": "transformers (this app's worker), llamacpp (a GGUF file as shipped), openai "
                              "(an OpenAI-compatible endpoint) or server (one started from server_command)"},
    "kind": {"type": "string", "enum": list(ModelEntry.Kind.values),
             "description": "transformers: full, awq, speculative; llamacpp: full, speculative; openai, server: full"},
    "base": {"type": "boolean", "description": BASE_MEANS},
    "in_chat_draws": {"type": "boolean", "default": False,
                      "description": "A base model staff let into anonymous battles (whose prompts are chat); "
                                     "false: it plays only where someone picks it"},
    "precision": {"type": "string", "enum": list(ModelEntry.Precision.values)},
    "source": {"type": "string", "maxLength": 500,
               "description": "A local path, a Hugging Face repo id in the local cache, or package:NAME"},
    "gguf_file": {"type": "string", "maxLength": 255},
    "draft": {"type": ["string", "null"], "description": "The slug of the draft entry (speculative kind)"},
    "context_length": {"type": "integer", "minimum": 0},
    "max_concurrency": {"type": "integer", "minimum": 0, "maximum": 256},
    "memory_estimate_mb": {"type": "integer", "minimum": 0},
    "cpus": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_CPUS, "default": 2.0,
             "description": "CPU cores a worker asks for on a Ray cluster; it runs that many threads (a whole number, "
                            "at least 1; an openai endpoint's worker may ask for a fraction such as 0.25). The local "
                            "backend shares this machine's cores instead"},
    "gpus": {"type": "number", "minimum": 0, "maximum": MAX_GPUS, "default": 0.0,
             "description": "GPUs a worker asks for on a Ray cluster: a share of one (0.5 lets two workers share a "
                            "GPU) or a whole number; 0: none. openai: 0 (the model runs on its own server)"},
    "base_url": {"type": "string", "maxLength": 500, "description": "openai engine: e.g. https://host/v1"},
    "remote_model": {"type": "string", "maxLength": 200, "description": "openai engine: the model's name there"},
    "api_key_env": {"type": "string", "maxLength": 128,
                    "description": "openai engine: the NAME of the environment variable holding the key (where the "
                                   "workers run), which must begin with ARENA_ENDPOINT_KEY_ (else 400, code "
                                   "key_variable_not_allowed); or use api_key instead"},
    "server_command": {"type": "string",
                       "description": "server engine: the command that starts an OpenAI-compatible server, with "
                                      "{port} (and {host}, {api_key}, {model}, {fraction})"},
    "system_prompt": _STR,
    "default_params": PARAMS,
    "aliases": {"type": "array", "maxItems": MAX_ALIASES,
                "items": {"type": "string", "minLength": 2, "maxLength": MAX_ALIAS_LENGTH, "pattern": "^[^,]*$"},
                "description": "Words that name the model (family, maker, product), e.g. [\"Gemma\", \"Google\"]: "
                               "a blind battle whose answer mentions one of either contestant's is flagged and "
                               "left out of the leaderboard by default"},
    "enabled": {"type": "boolean"},
    "price_input_per_mtok": {"type": ["number", "null"], "minimum": 0, "maximum": MAX_PRICE,
                             "description": "US dollars per million prompt tokens (with price_output_per_mtok); "
                                            "null: no price. Suite runs show each answer's cost from it"},
    "price_output_per_mtok": {"type": ["number", "null"], "minimum": 0, "maximum": MAX_PRICE,
                              "description": "US dollars per million generated tokens (with price_input_per_mtok)"},
    "price_per_hour": {"type": ["number", "null"], "minimum": 0, "maximum": MAX_PRICE,
                       "description": "US dollars per hour of the machine, instead of token prices: an answer "
                                      "costs its generation time (from its measured tokens/s) at this price"},
}
WRITE_ONLY_FIELDS = {
    "api_key": {"type": ["string", "null"], "writeOnly": True,
                "description": "openai engine: the endpoint's key, stored encrypted and never returned (the entry "
                               "shows api_key_stored); null removes the stored key"},
}
READ_ONLY_FIELDS = {
    "api_key_stored": {"type": "boolean", "readOnly": True, "description": "Whether a key is stored (api_key)"},
    "check_error": {"type": "string", "readOnly": True,
                    "description": "openai, server: why the check before enabling failed (the key is there, the "
                                   "endpoint answers and lists the model); empty once it passed. An entry that "
                                   "fails it stays disabled"},
    "checked_at": {"type": ["string", "null"], "format": "date-time", "readOnly": True},
    "notices": {"type": "array", "readOnly": True,
                "description": "Only in a write's answer, when there is one: api_key_dropped when a new base URL on "
                               "another origin (scheme, host, port) removed the stored key (give it again)",
                "items": {"type": "object", "required": ["code", "message"],
                          "properties": {"code": {"type": "string", "enum": ["api_key_dropped"]},
                                         "message": {"type": "string"}}}},
}
ENTRY = {"type": "object", "properties": {**ENTRY_FIELDS, **READ_ONLY_FIELDS}}
NEW_ENTRY = {"type": "object", "required": ["slug", "name", "engine"], "additionalProperties": False,
             "properties": {**ENTRY_FIELDS, **WRITE_ONLY_FIELDS}}
CHANGES = {"type": "object", "additionalProperties": False, "properties": {**ENTRY_FIELDS, **WRITE_ONLY_FIELDS}}
SLUG = [{"name": "slug", "in": "path", "required": True, "schema": {"type": "string", "pattern": r"^[-a-zA-Z0-9_]+$"}}]
PROBE = {"type": "object", "properties": {
    "slug": _STR, "status": _STR, "generation_id": _STR, "ok": {"type": "boolean"},
    "time_to_first_token_s": {"type": ["number", "null"]}, "tokens_per_s": {"type": ["number", "null"]},
    "load_wait_s": {"type": ["number", "null"]}, "text": _STR, "error": _STR,
}}
COMMON = {"401": error_response("Missing or invalid token"), "403": error_response("Not a staff token")}

OPENAPI_PATHS = {
    "/api/v1/catalogue": {
        "get": {
            "operationId": "listCatalogue",
            "summary": "Staff: every catalogue entry, enabled or not",
            "responses": {"200": {"description": "The catalogue", **json_content(
                {"type": "object", "properties": {"entries": {"type": "array", "items": ENTRY}}})}, **COMMON},
        },
        "post": {
            "operationId": "addCatalogueEntry",
            "summary": "Staff: add an entry (validated as the admin validates it; an enabled openai or server "
                       "entry is checked first and stays disabled, with check_error, if the check fails)",
            "requestBody": {"required": True, **json_content(NEW_ENTRY)},
            "responses": {"201": {"description": "Added", **json_content(ENTRY)},
                          "400": error_response("Invalid entry; `fields` says which"), **COMMON, **TOO_LARGE},
        },
    },
    "/api/v1/catalogue/{slug}": {
        "parameters": SLUG,
        "get": {"operationId": "getCatalogueEntry", "summary": "Staff: one entry",
                "responses": {"200": {"description": "The entry", **json_content(ENTRY)},
                              "404": error_response("No such entry"), **COMMON}},
        "patch": {
            "operationId": "changeCatalogueEntry",
            "summary": "Staff: change some fields of an entry (enabling an openai or server entry checks it first)",
            "requestBody": {"required": True, **json_content(CHANGES)},
            "responses": {"200": {"description": "Changed", **json_content(ENTRY)},
                          "400": error_response("Invalid change; `fields` says which"),
                          "404": error_response("No such entry"), **COMMON, **TOO_LARGE},
        },
        "delete": {
            "operationId": "deleteCatalogueEntry",
            "summary": "Staff: remove an entry that nothing refers to",
            "responses": {"204": {"description": "Removed"}, "404": error_response("No such entry"),
                          "409": error_response("Generations refer to it: disable it instead"), **COMMON},
        },
    },
    "/api/v1/catalogue/{slug}/test": {
        "parameters": SLUG,
        "post": {
            "operationId": "testCatalogueEntry",
            "summary": "Staff: check an openai or server entry (status 'check failed' with the reason), then "
                       "start the entry, send one short prompt, report TTFT and tokens/s or the error",
            "responses": {
                "200": {"description": "The probe ended (ok tells whether it answered)", **json_content(PROBE)},
                "202": {"description": "Still running after 120 s: follow generation_id", **json_content(PROBE)},
                "404": error_response("No such entry"), "409": error_response("The entry is disabled"), **COMMON,
            },
        },
    },
}
