"""The JSON API (v1), described at /api/v1/openapi.json (`openapi.SPEC` with the tournament paths)."""

from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from arena.accounts.openapi import OPENAPI_PATHS as TOKEN_PATHS
from arena.catalogue.models import ModelEntry
from arena.generations import admission
from arena.generations.models import Generation
from arena.generations.services import start_generation
from arena.history.openapi import OPENAPI_PATHS as EXPORT_PATHS
from arena.playground.forms import GenerationForm
from arena.suite_runs.openapi import OPENAPI_PATHS as SUITE_RUN_PATHS
from arena.suites.openapi import OPENAPI_PATHS as SUITE_PATHS
from arena.tournaments.openapi import OPENAPI_PATHS as TOURNAMENT_PATHS
from arena.workers.status import for_viewer as workers_for_viewer
from inference.protocol import ParamError, SamplingParams

from .auth import created, error, form_error, json_body, token_required
from .catalogue_openapi import CATALOGUE_PATHS
from .openapi import SPEC

FULL_SPEC = {**SPEC, "paths": {**SPEC["paths"], **TOURNAMENT_PATHS, **SUITE_PATHS, **SUITE_RUN_PATHS, **EXPORT_PATHS,
                               **CATALOGUE_PATHS, **TOKEN_PATHS}}


@require_GET
def openapi(request):
    return JsonResponse(FULL_SPEC)


@csrf_exempt
def not_found(request, rest=""):
    """Any other /api/v1/ URL (an id that is not a UUID included): a JSON 404, not the HTML page."""
    return error(404, f"No such API URL: {request.method} {request.path}. See /api/v1/openapi.json.")


def model_json(entry: ModelEntry) -> dict:
    return {
        "slug": entry.slug,
        "name": entry.name,
        "description": entry.description,
        "engine": entry.engine,
        "kind": entry.kind,
        "base": entry.base,
        "precision": entry.precision,
        "default_params": entry.default_params,
    }


def generation_json(gen: Generation) -> dict:
    return {
        "id": str(gen.id),
        "model": gen.model.slug,
        "status": gen.status,
        "prompt": gen.prompt,
        "system_prompt": gen.system_prompt,
        "params": gen.params,
        "tag": gen.tag,
        "text": gen.text,
        "finish_reason": gen.finish_reason,
        "failure_reason": gen.failure_reason,
        "output_valid": gen.output_valid,
        "metrics": {
            "prompt_tokens": gen.prompt_tokens,
            "generated_tokens": gen.generated_tokens,
            "time_to_first_token_s": gen.time_to_first_token_s,
            "tokens_per_s": gen.tokens_per_s,
            "load_wait_s": gen.load_wait_s,
            "queue_wait_s": gen.queue_wait_s,
        },
        # Everything the worker measured, in the shape of vLLM's per-request metrics
        # (queue time, inter-token latency mean/p95, speculative acceptance rate, ...).
        # (Not the raw failure line kept for staff: public_reason's failure_reason is what users read.)
        "request_metrics": {k: v for k, v in (gen.metrics or {}).items() if k != "failure_detail"},
        "created_at": gen.created_at.isoformat(),
        "finished_at": gen.finished_at.isoformat() if gen.finished_at else None,
        "url": gen.get_absolute_url(),
    }


@require_GET
@token_required
def models(request):
    return JsonResponse({"models": [model_json(m) for m in ModelEntry.objects.enabled()]})


@require_http_methods(["POST"])
@token_required
def create_generation(request):
    try:
        body = json_body(request, {"model", "prompt", "system_prompt", "params", "tag"})
    except ValueError as exc:
        return error(400, str(exc))
    params = body.get("params") or {}
    if not isinstance(params, dict):
        return error(400, "params must be an object.", {"params": "must be an object"})
    try:
        SamplingParams.from_dict(params)  # strict types and ranges before the form's merge
    except ParamError as exc:
        return error(400, f"Invalid parameters: {exc}", exc.errors)
    if not all(isinstance(body.get(name, ""), str) for name in ("prompt", "system_prompt", "tag")):
        return error(400, "prompt, system_prompt and tag must be strings.")
    form = GenerationForm({"model": body.get("model"), "prompt": body.get("prompt", ""),
                           "system_prompt": body.get("system_prompt", ""), "tag": body.get("tag", "")})
    if not form.is_valid():
        return form_error(form)
    try:  # the entry's defaults, and what its engine can do (a regex needs our own decoding)
        merged = form.cleaned_data["model"].params_with_defaults(params)
    except ParamError as exc:
        return error(400, f"Invalid parameters: {exc}", exc.errors)
    cleaned = {**form.cleaned_data, "params": merged.to_dict()}
    gen = start_generation(request.user, cleaned, origin=Generation.Origin.API)
    return created(generation_json(gen), f"/api/v1/generations/{gen.id}", status=202)


@require_GET
@token_required
def generation(request, generation_id):
    gen = Generation.objects.visible().select_related("model").filter(id=generation_id, owner=request.user).first()
    if gen is None:
        return error(404, "No such generation.")
    return JsonResponse({**generation_json(gen), "queue": admission.place(gen)})


@require_GET
@token_required
def workers(request):
    """Staff only: every worker the orchestrator runs, with memory and cold-start figures; the
    workers of the token owner's own unrevealed blind tournaments only summed up in `hidden`."""
    if not request.user.is_staff:
        return error(403, "Listing workers needs a staff token (manage.py arena_token USERNAME --staff).")
    status = workers_for_viewer(request.user)
    fields = ("worker_id", "slug", "node", "state", "reserved_mb", "estimate_mb", "measured_mb", "in_flight",
              "last_used", "cold_start_s", "uptime_s")
    return JsonResponse({
        "orchestrator_running": status["running"],
        "nodes": status["nodes"],
        "workers": [{name: worker.get(name) for name in fields} for worker in status["workers"]],
        "hidden": status["hidden"],
    })
