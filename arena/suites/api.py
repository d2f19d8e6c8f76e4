"""The suite endpoints of the JSON API: create, list mine, read one, import a new version of
one, export one, delete one. Its owner changes a suite; its team's members read it and export it
(a write of theirs: 403 `read_only`); the list takes `?scope=team`: the suites of the caller's
current team, by every member (the default, `mine`: the caller's own).

A suite's prompts go through the same checks as an upload's (arena.suites.parsing), each
problem naming the item: "prompts[2]: 'prompt' is missing", "prompts[0]: checks: check 1: regex:
not a valid regex: ...". "default_checks": the checks every prompt's answers get first
(arena.suites.checks), each refused one named "default_checks: check 0: ...". A create (POST) or a
new version (PUT) takes a JSON object, or a suite file as the body itself, its Content-Type saying
which format (FILE_TYPES: `curl -X PUT -H 'Content-Type: application/yaml' --data-binary @suite.yaml`);
`?name=` and `?tag=` name a suite whose file does not (JSONL, CSV)."""

from dataclasses import replace

from django.http import HttpResponse, JsonResponse

from arena.accounts.bearer import token_required
from arena.api.http import created, error, form_error, json_body, methods
from arena.teams.membership import api_scope, whose

from . import export, files, parsing
from .access import access_suite
from .actions import create_suite, import_version
from .forms import SuiteForm
from .models import Suite, SuitePrompt

BODY_FIELDS = {"name", "tag", "prompts", "default_checks"}
FILE_TYPES = {"application/yaml": "yaml", "application/x-yaml": "yaml", "text/yaml": "yaml",
              "application/jsonl": "jsonl", "application/x-ndjson": "jsonl", "text/csv": "csv"}


def prompt_json(prompt: SuitePrompt) -> dict:
    return {"position": prompt.position, "prompt": prompt.prompt, "system_prompt": prompt.system_prompt,
            "reference": prompt.reference, "json_schema": prompt.json_schema, "regex": prompt.regex,
            "checks": prompt.checks, "tags": prompt.tags}


def summary_json(suite: Suite, prompt_count: int) -> dict:
    return {"id": str(suite.id), **whose(suite), "name": suite.name, "tag": suite.tag, "prompt_count": prompt_count,
            "version": suite.version, "created_at": suite.created_at.isoformat(), "url": suite.get_absolute_url()}


def suite_json(suite: Suite) -> dict:
    prompts = [prompt_json(p) for p in suite.ordered_prompts()]
    return {**summary_json(suite, len(prompts)), "default_checks": suite.default_checks, "prompts": prompts}


class BodyError(ValueError):
    """A request body that is not a suite; the response to give."""

    def __init__(self, response):
        super().__init__("invalid body")
        self.response = response


def _body_file(request) -> parsing.SuiteFile:
    """The suite the request's body holds: a file (by its Content-Type) or a JSON object."""
    content_type = request.content_type or ""
    try:
        if content_type in FILE_TYPES:  # ?name= and ?tag= name the suite where the file does not
            found = files.parse_data(FILE_TYPES[content_type], request.body)
            return replace(found, name=found.name or request.GET.get("name"),
                           tag=found.tag if found.tag is not None else request.GET.get("tag"))
        body = json_body(request, BODY_FIELDS)
    except parsing.SuiteError as exc:
        raise BodyError(error(400, f"Invalid suite file: {exc}", {"file": str(exc)})) from None
    except ValueError as exc:
        raise BodyError(error(400, str(exc))) from None
    strings = {key: body.get(key) for key in ("name", "tag")}  # None: not given
    if not all(isinstance(body[key], str) for key in strings if key in body):
        raise BodyError(error(400, "name and tag must be strings."))
    try:
        prompts = parsing.api_items(body.get("prompts"))
    except parsing.SuiteError as exc:
        raise BodyError(error(400, f"Invalid prompts: {exc}", {"prompts": str(exc)})) from None
    try:
        checked = parsing.check_defaults(body.get("default_checks"), prompts)
    except parsing.SuiteError as exc:
        raise BodyError(error(400, f"Invalid default checks: {exc}", {"default_checks": str(exc)})) from None
    default_checks = checked if "default_checks" in body else None  # None: a new version keeps the suite's
    return parsing.SuiteFile(prompts, name=strings["name"], tag=strings["tag"], default_checks=default_checks)


def _name_and_tag(found: parsing.SuiteFile, *, required: bool) -> SuiteForm:
    """The name and tag checked as the pages check them (a name required for a new suite)."""
    form = SuiteForm({"name": found.name or "", "tag": found.tag or ""})
    form.fields["name"].required = required
    if not form.is_valid():
        raise BodyError(form_error(form))
    return form


def _create(request):
    try:
        found = _body_file(request)
        form = _name_and_tag(found, required=True)
    except BodyError as exc:
        return exc.response
    suite = create_suite(request.user, name=form.cleaned_data["name"], tag=form.cleaned_data["tag"],
                         prompts=found.prompts, default_checks=found.default_checks)
    return created(suite_json(suite), f"/api/v1/suites/{suite.id}")


def _import(request, suite: Suite):
    """A new version from the body (200, `new_version` true), or none if it holds the current one."""
    try:
        found = _body_file(request)
        form = _name_and_tag(found, required=False)
    except BodyError as exc:
        return exc.response
    cleaned = parsing.SuiteFile(found.prompts, name=form.cleaned_data["name"] or None,
                                tag=None if found.tag is None else form.cleaned_data["tag"],
                                default_checks=found.default_checks)
    changed = import_version(suite, cleaned)
    return JsonResponse({**suite_json(suite), "new_version": changed})


@methods("GET", "POST")
@token_required
def suites(request):
    if request.method == "POST":
        return _create(request)
    listed = Suite.objects.in_scope(request.user, api_scope(request.user, request.GET.get("scope")))
    return JsonResponse({"suites": [summary_json(s, s.prompt_count) for s in listed]})


@methods("GET", "PUT", "DELETE")
@token_required
def suite(request, suite_id):
    found = access_suite(request.user, suite_id, change=request.method != "GET")
    if request.method == "PUT":
        return _import(request, found)
    if request.method == "DELETE":
        if problem := found.delete_problem:
            return error(409, problem)
        found.delete()
        return HttpResponse(status=204)
    return JsonResponse(suite_json(found))


@methods("GET")
@token_required
def suite_export(request, suite_id, fmt: str):
    """The suite's current version as a file (arena.suites.export)."""
    found = access_suite(request.user, suite_id, change=False)
    if fmt not in export.FORMATS:
        return error(404, f"A suite exports as suite.{', suite.'.join(export.FORMATS)}.")
    body, content_type = export.render(found, fmt)
    return HttpResponse(body, content_type=content_type)
