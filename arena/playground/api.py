"""The generation endpoints of the JSON API (described in .openapi): start one, as the
playground's page does, and read it back with its status, text and metrics."""

from django.http import JsonResponse

from arena.accounts.bearer import token_required
from arena.api.http import created, error, form_error, json_body, methods
from arena.api.params import NotAnObject, params_object
from arena.generations import admission, readiness, runs
from arena.generations.access import access_generation
from arena.generations.models import Generation
from arena.generations.services import GenerationRequest, start_generation
from arena.teams.membership import whose
from inference.protocol import ParamError, SamplingParams

from .forms import GenerationForm


def generation_json(gen: Generation) -> dict:
    body = _generation_json(gen)
    if gen.readiness_withheld():  # its owner's blind verdict is pending (arena/generations/readiness.py)
        body["metrics"].update(load_wait_s=None, queue_wait_s=None, withheld=readiness.WITHHELD)
        body["request_metrics"] = readiness.redact_metrics(body["request_metrics"])
        body["finished_at"] = None  # less the creation, the answer's own times: the wait
    return body


def _generation_json(gen: Generation) -> dict:
    return {
        "id": str(gen.id),
        **whose(gen),
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
        "cached": gen.cached,  # reused from an identical earlier request (arena/generations/cache.py)
        "cached_from": str(gen.cached_from_id) if gen.cached_from_id else None,
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


@methods("POST")
@token_required
def create_generation(request):
    try:
        body = json_body(request, {"model", "prompt", "system_prompt", "params", "tag"})
    except ValueError as exc:
        return error(400, str(exc))
    try:
        params = params_object(body)
    except NotAnObject as exc:
        return exc.response()
    try:
        SamplingParams.from_dict(params)  # strict types and ranges before the form's merge
    except ParamError as exc:
        return error(400, f"Invalid parameters: {exc}", exc.errors, code="invalid_params")
    if not all(isinstance(body.get(name, ""), str) for name in ("prompt", "system_prompt", "tag")):
        return error(400, "prompt, system_prompt and tag must be strings.")
    form = GenerationForm({"model": body.get("model"), "prompt": body.get("prompt", ""),
                           "system_prompt": body.get("system_prompt", ""), "tag": body.get("tag", "")})
    if not form.is_valid():
        return form_error(form)
    try:  # the entry's defaults, and what its engine can do (a regex needs our own decoding)
        merged = form.cleaned_data["model"].params_with_defaults(params)
    except ParamError as exc:
        return error(400, f"Invalid parameters: {exc}", exc.errors, code="invalid_params")
    cleaned = {**form.cleaned_data, "params": merged.to_dict()}
    gen = start_generation(request.user, GenerationRequest.from_form(cleaned), origin=Generation.Origin.API,
                           kind=runs.API)
    return created(generation_json(gen), f"/api/v1/generations/{gen.id}", status=202)


@methods("GET")
@token_required
def generation(request, generation_id):
    gen = access_generation(request.user, generation_id, change=False)  # a teammate reads it
    return JsonResponse({**generation_json(gen), "queue": admission.place(gen)})
