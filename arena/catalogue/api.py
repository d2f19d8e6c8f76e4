"""The catalogue's JSON API (described in .openapi): the enabled models for everyone,

    GET    /api/v1/models                  the enabled models

and the whole catalogue for staff, so catalogues can be scripted:

    GET    /api/v1/catalogue               every entry, enabled or not
    POST   /api/v1/catalogue               add one
    GET    /api/v1/catalogue/{slug}        one entry
    PATCH  /api/v1/catalogue/{slug}        change some fields
    DELETE /api/v1/catalogue/{slug}        remove one (refused once it has generations: disable it)
    POST   /api/v1/catalogue/{slug}/test   start it, send a short prompt, report TTFT and tokens/s

Every write goes through the admin's own validation (ModelEntry.clean), so an engine and
kind that do not go together are refused here with the same reason. An endpoint's key is
written, never read: "api_key" stores it encrypted (null removes it), and an entry shows only
"api_key_stored"; or "api_key_env" names the environment variable that holds it, one of
ARENA_ENDPOINT_KEY_* (arena/catalogue/keys.py). A new base URL on another origin removes a stored
key not given again in the same request, and the answer says so in "notices". An openai or
server entry being enabled is checked first (key, endpoint, model listed) and stays disabled
when the check fails, with the reason in "check_error".
"""

from __future__ import annotations

import json
import math

from django import forms
from django.db.models import ProtectedError
from django.http import HttpResponse, JsonResponse

from arena.accounts.bearer import token_required
from arena.api.http import error, form_error, json_body, methods

from . import keys
from .forms import StoredKeyForm
from .models import ModelEntry
from .probe import run_test

FIELDS = ("slug", "name", "label", "description", "engine", "kind", "base", "in_chat_draws", "precision", "source",
          "gguf_file", "draft", "context_length", "max_concurrency", "memory_estimate_mb", "cpus", "gpus", "base_url",
          "remote_model", "api_key_env", "server_command", "system_prompt", "default_params", "aliases", "enabled",
          "price_input_per_mtok", "price_output_per_mtok", "price_per_hour")
WRITE_ONLY = ("api_key",)  # stored encrypted, never returned
READ_ONLY = ("api_key_stored", "check_error", "checked_at")
TYPES: dict[str, type | tuple[type, ...]] = {
    "base": bool, "in_chat_draws": bool, "enabled": bool, "context_length": int, "max_concurrency": int,
    "memory_estimate_mb": int,
    "cpus": float, "gpus": float,  # a number: 2 or 0.5
    "default_params": dict, "aliases": list, "draft": (str, type(None)), "api_key": (str, type(None)),
}
JSON_FIELDS = ("default_params", "aliases")
PRICES = ("price_input_per_mtok", "price_output_per_mtok", "price_per_hour")  # a number, or null: none
MAX_NUMBER = 1e300  # a JSON number beyond this is no resource figure (float() of a 400-digit integer overflows)
ERROR_CODES = (keys.KEY_VARIABLE_CODE, keys.HOST_CODE)
STAFF_ONLY = "Managing the catalogue needs a staff token (manage.py arena_token USERNAME --staff)."


class EntryForm(StoredKeyForm):
    draft = forms.ModelChoiceField(queryset=ModelEntry.objects.all(), to_field_name="slug", required=False,
                                   error_messages={"invalid_choice": "No catalogue entry has that slug."})

    class Meta:
        model = ModelEntry
        fields = FIELDS


def model_json(entry: ModelEntry) -> dict:
    """An enabled model as every token holder sees it."""
    return {
        "slug": entry.slug,
        "name": entry.name,
        "description": entry.description,
        "engine": entry.engine,
        "kind": entry.kind,
        "base": entry.base,
        "prompt_form": entry.prompt_form,  # what "base" means for a prompt
        "precision": entry.precision,
        "default_params": entry.default_params,
    }


@methods("GET")
@token_required
def models(request):
    return JsonResponse({"models": [model_json(m) for m in ModelEntry.objects.enabled()]})


def entry_json(entry: ModelEntry) -> dict:
    data = {name: getattr(entry, name) for name in FIELDS if name != "draft"}
    data["draft"] = entry.draft.slug if entry.draft else None
    data["api_key_stored"] = entry.has_stored_key
    data["check_error"] = entry.check_error
    data["checked_at"] = entry.checked_at.isoformat() if entry.checked_at else None
    return data


def staff_required(view):
    def wrapper(request, *args, **kwargs):
        if not request.user.is_staff:
            return error(403, STAFF_ONLY)
        return view(request, *args, **kwargs)

    return wrapper


@methods("GET", "POST")
@token_required
@staff_required
def catalogue(request):
    if request.method == "GET":
        return JsonResponse({"entries": [entry_json(e) for e in ModelEntry.objects.select_related("draft")]})
    return _save(request, None)


@methods("GET", "PATCH", "DELETE")
@token_required
@staff_required
def catalogue_entry(request, slug):
    entry = ModelEntry.objects.filter(slug=slug).select_related("draft").first()
    if entry is None:
        return error(404, f"No catalogue entry '{slug}'.")
    if request.method == "GET":
        return JsonResponse(entry_json(entry))
    if request.method == "PATCH":
        return _save(request, entry)
    try:
        entry.delete()
    except ProtectedError:
        return error(409, f"'{slug}' has generations or tournament places that refer to it: disable it instead "
                          '(PATCH {"enabled": false}).')
    return HttpResponse(status=204)


@methods("POST")
@token_required
@staff_required
def test_entry(request, slug):
    entry = ModelEntry.objects.filter(slug=slug).first()
    if entry is None:
        return error(404, f"No catalogue entry '{slug}'.")
    if not entry.enabled:
        return error(409, f"'{slug}' is disabled: enable it to test it.")
    result = run_test(entry, request.user)
    return JsonResponse(result.as_json(), status=200 if result.ended else 202)


def _save(request, entry: ModelEntry | None) -> JsonResponse:
    try:
        body = json_body(request)
    except ValueError as exc:
        return error(400, str(exc))
    unknown = sorted(set(body) - set(FIELDS) - set(WRITE_ONLY))
    if unknown:
        settable = ", ".join((*FIELDS, *WRITE_ONLY))
        return error(400, f"Unknown field(s): {', '.join(unknown)}. An entry has: {settable}"
                          f" (and, read-only, {', '.join(READ_ONLY)}).")
    wrong = {name: f"must be {_type_name(name)}" for name, value in body.items() if not _typed(name, value)}
    if wrong:
        return error(400, "Invalid request: " + "; ".join(f"{k}: {v}" for k, v in wrong.items()), wrong)
    current = {name: value for name, value in entry_json(entry or ModelEntry()).items() if name in FIELDS}
    key = body.pop("api_key", "")  # a string stores it; null removes the stored one
    data = {**current, **body, "api_key": key or "", "remove_stored_key": key is None}
    form = EntryForm(_as_form_data(data), instance=entry)
    if not form.is_valid():
        return _invalid(form)
    held = form.instance.hold_for_check()  # no transaction here: the check does not hold the write lock
    saved = form.save()
    if held:
        saved.enable_if_checked()
    answer = entry_json(saved)
    if form.key_dropped:  # said where a script reads it: the key must be given again for the new host
        answer["notices"] = [{"code": keys.KEY_DROPPED_CODE, "message": keys.KEY_DROPPED}]
    return JsonResponse(answer, status=200 if entry else 201)


def _invalid(form: EntryForm) -> JsonResponse:
    """form_error's 400, with the machine code of a refusal that has one of its own (a key variable
    outside ARENA_ENDPOINT_KEY_, a host outside ARENA_ENDPOINT_HOSTS), else "invalid"."""
    response = form_error(form)
    codes = [e.code for errors in form.errors.as_data().values() for e in errors if e.code in ERROR_CODES]
    body = json.loads(response.content)
    body["error"]["code"] = codes[0] if codes else "invalid"
    return JsonResponse(body, status=response.status_code)


def _typed(name: str, value) -> bool:
    if name in PRICES:
        return value is None or _typed("cpus", value)  # a finite number, as a resource figure
    expected = TYPES.get(name, str)
    if expected in (int, float) and isinstance(value, bool):
        return False  # JSON true is not a number
    if expected is float:  # a finite one: NaN, Infinity and a 400-digit integer reach here from JSON
        return isinstance(value, (int, float)) and abs(value) <= MAX_NUMBER and math.isfinite(value)
    if expected is list:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return isinstance(value, expected)


def _type_name(name: str) -> str:
    if name in PRICES:
        return "a number or null"
    names: dict[type | tuple[type, ...], str] = {
        bool: "true or false", int: "a whole number", float: "a number", dict: "an object", list: "a list of strings",
        str: "a string"}
    return names.get(TYPES.get(name, str), "a slug or null")


def _as_form_data(data: dict) -> dict:
    """JSON values as a form posts them: a false boolean or a null left out, JSON fields as JSON text."""
    out = {}
    for name, value in data.items():
        if value is None or value is False:
            continue
        out[name] = json.dumps(value) if name in JSON_FIELDS else value
    return out
