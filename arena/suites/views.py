"""The suite pages: my suites, a new one (typed or uploaded), one suite, a new version of it
(its file imported again), its export, delete. Every form posts and redirects, so each works
without JavaScript. Its owner changes a suite; the members of its team open it read-only (the
page and its export); anyone else gets a 404 (not a hint it exists); sharing is arena.history's
share link."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from arena.access import may_change, visible_to
from arena.teams.membership import list_scope

from . import export
from .access import access_suite
from .actions import create_suite, import_version
from .forms import ImportVersionForm, TypedSuiteForm, UploadSuiteForm
from .models import Suite

PER_PAGE = 25


class _Scope(str):
    """The list's scope as the page links' filters (history/_pages.html keeps it across pages)."""

    def as_query(self) -> dict:
        return {"scope": str(self)} if self == "team" else {}


@login_required
@require_GET
def suite_list(request):
    """?scope=mine (the default): the viewer's suites; ?scope=team: those of their current team."""
    scope, team = list_scope(request.user, request.GET.get("scope"))
    suites = Suite.objects.in_scope(request.user, scope)
    page = Paginator(suites.select_related("owner"), PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "suites/list.html", {"page": page, "scope": scope, "team": team, "filters": _Scope(scope)})


def _create(request, form, mode: str):
    """Save the suite and open it, or show the form again with every problem named."""
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        prompts = data["file"].prompts if mode == "file" else data["prompts"]
        suite = create_suite(request.user, name=data["name"], tag=data["tag"], prompts=prompts,
                             default_checks=data["default_checks"])
        return redirect(suite)
    return render(request, "suites/new.html", {"form": form, "mode": mode},
                  status=400 if form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
def suite_new(request):
    return _create(request, TypedSuiteForm(request.POST or None), "prompts")


@login_required
@require_http_methods(["GET", "POST"])
def suite_upload(request):
    return _create(request, UploadSuiteForm(request.POST or None, request.FILES or None), "file")


def _suite_page(request, suite, *, status: int = 200, **extra):
    # Only the runs this viewer may open (a run made in another of the owner's teams is not theirs to see).
    runs = suite.runs.filter(visible_to(request.user)).select_related("judge")
    context = {"suite": suite, "prompts": suite.ordered_prompts(), "runs": runs, "import_form": ImportVersionForm(),
               "formats": export.FORMATS, "can_change": may_change(request.user, suite), **extra}
    return render(request, "suites/suite.html", context, status=status)


@login_required
@require_GET
def suite_detail(request, suite_id):
    suite = access_suite(request.user, suite_id, change=False)
    return _suite_page(request, suite, imported=request.GET.get("import", ""))


@login_required
@require_POST
def suite_import(request, suite_id):
    """The suite's file again: a new version if it changed (the old version's runs keep theirs)."""
    suite = access_suite(request.user, suite_id)
    form = ImportVersionForm(request.POST, request.FILES)
    if not form.is_valid():
        return _suite_page(request, suite, status=400, import_form=form)
    outcome = "new" if import_version(suite, form.cleaned_data["file"]) else "same"
    return redirect(f"{suite.get_absolute_url()}?import={outcome}")  # the page says which


@login_required
@require_GET
def suite_export(request, suite_id, fmt: str):
    suite = access_suite(request.user, suite_id, change=False)
    if fmt not in export.FORMATS:
        raise Http404(f"A suite exports as {', '.join(export.FORMATS)}.")
    body, content_type = export.render(suite, fmt)
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{export.filename(suite, fmt)}"'
    return response


@login_required
@require_POST
def suite_delete(request, suite_id):
    suite = access_suite(request.user, suite_id)
    if problem := suite.delete_problem:
        return _suite_page(request, suite, status=409, problem=problem)
    suite.delete()
    return redirect("suites")
