"""The suite pages: my suites, a new one (typed or uploaded), one suite, delete. Every form
posts and redirects, so each works without JavaScript. Only the owner opens a suite;
anyone else gets a 404 (not a hint it exists); sharing is arena.history's share link."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from .access import access_suite
from .actions import create_suite
from .forms import TypedSuiteForm, UploadSuiteForm
from .models import Suite

PER_PAGE = 25


@login_required
@require_GET
def suite_list(request):
    page = Paginator(Suite.objects.owned_by(request.user), PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "suites/list.html", {"page": page})


def _create(request, form, prompts_field: str):
    """Save the suite and open it, or show the form again with every problem named."""
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        suite = create_suite(request.user, name=data["name"], tag=data["tag"], prompts=data[prompts_field],
                             default_checks=data["default_checks"])
        return redirect(suite)
    return render(request, "suites/new.html", {"form": form, "mode": prompts_field},
                  status=400 if form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
def suite_new(request):
    return _create(request, TypedSuiteForm(request.POST or None), "prompts")


@login_required
@require_http_methods(["GET", "POST"])
def suite_upload(request):
    return _create(request, UploadSuiteForm(request.POST or None, request.FILES or None), "file")


@login_required
@require_GET
def suite_detail(request, suite_id):
    suite = access_suite(request.user, suite_id)
    return render(request, "suites/suite.html", {"suite": suite, "prompts": suite.ordered_prompts(),
                                                 "runs": suite.runs.select_related("judge")})


@login_required
@require_POST
def suite_delete(request, suite_id):
    suite = access_suite(request.user, suite_id)
    if problem := suite.delete_problem:
        return render(request, "suites/suite.html", {"suite": suite, "prompts": suite.ordered_prompts(),
                                                     "runs": suite.runs.select_related("judge"), "problem": problem},
                      status=409)
    suite.delete()
    return redirect("suites")
