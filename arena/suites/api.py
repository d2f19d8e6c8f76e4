"""The suite endpoints of the JSON API: create, list mine, read one, delete one.

A created suite's prompts go through the same checks as an upload's (arena.suites.parsing),
each problem naming the item: "prompts[2]: 'prompt' is missing", "prompts[0]: checks: check 1:
regex: not a valid regex: ...". "default_checks": the checks every prompt's answers get first
(arena.suites.checks), each refused one named "default_checks: check 0: ..."."""

from django.http import HttpResponse, JsonResponse

from arena.accounts.bearer import token_required
from arena.api.http import created, error, form_error, json_body, methods

from . import parsing
from .access import access_suite
from .actions import create_suite
from .forms import SuiteForm
from .models import Suite, SuitePrompt

CREATE_FIELDS = {"name", "tag", "prompts", "default_checks"}


def prompt_json(prompt: SuitePrompt) -> dict:
    return {"position": prompt.position, "prompt": prompt.prompt, "system_prompt": prompt.system_prompt,
            "reference": prompt.reference, "json_schema": prompt.json_schema, "regex": prompt.regex,
            "checks": prompt.checks}


def summary_json(suite: Suite, prompt_count: int) -> dict:
    return {"id": str(suite.id), "name": suite.name, "tag": suite.tag, "prompt_count": prompt_count,
            "created_at": suite.created_at.isoformat(), "url": suite.get_absolute_url()}


def suite_json(suite: Suite) -> dict:
    prompts = [prompt_json(p) for p in suite.ordered_prompts()]
    return {**summary_json(suite, len(prompts)), "default_checks": suite.default_checks, "prompts": prompts}


def _create(request):
    try:
        body = json_body(request, CREATE_FIELDS)
    except ValueError as exc:
        return error(400, str(exc))
    strings = {"name": body.get("name", ""), "tag": body.get("tag", "")}
    if not all(isinstance(v, str) for v in strings.values()):
        return error(400, "name and tag must be strings.")
    form = SuiteForm(strings)
    if not form.is_valid():
        return form_error(form)
    try:
        prompts = parsing.api_items(body.get("prompts"))
    except parsing.SuiteError as exc:
        return error(400, f"Invalid prompts: {exc}", {"prompts": str(exc)})
    try:
        default_checks = parsing.check_defaults(body.get("default_checks"), prompts)
    except parsing.SuiteError as exc:
        return error(400, f"Invalid default checks: {exc}", {"default_checks": str(exc)})
    suite = create_suite(request.user, name=form.cleaned_data["name"], tag=form.cleaned_data["tag"], prompts=prompts,
                         default_checks=default_checks)
    return created(suite_json(suite), f"/api/v1/suites/{suite.id}")


@methods("GET", "POST")
@token_required
def suites(request):
    if request.method == "POST":
        return _create(request)
    return JsonResponse({"suites": [summary_json(s, s.prompt_count) for s in Suite.objects.owned_by(request.user)]})


@methods("GET", "DELETE")
@token_required
def suite(request, suite_id):
    found = access_suite(request.user, suite_id)
    if request.method == "DELETE":
        if problem := found.delete_problem:
            return error(409, problem)
        found.delete()
        return HttpResponse(status=204)
    return JsonResponse(suite_json(found))
