"""The suite run pages: my runs, a new run, a run (with its live progress fragment, cancel and
exports) and people judging its pairs blind. Only the owner opens a run; anyone else gets a
404. The behaviour lives on SuiteRun (arena.suites.models) and in arena.suite_runs.report."""

from __future__ import annotations

import random

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from arena.generations.export import download

from . import export, report, runner
from .access import access_run
from .actions import RunError, record_human_verdict, reveal_for, start_run
from .forms import SuiteRunForm, VoteForm, pair_token
from .models import SuiteRun, VerdictError


@login_required
@require_GET
def run_list(request):
    runs = SuiteRun.objects.filter(owner=request.user).select_related("suite", "judge")[:100]
    return render(request, "suite_runs/list.html", {"runs": runs})


@login_required
@require_http_methods(["GET", "POST"])
def run_new(request):
    form = SuiteRunForm(request.POST or None, owner=request.user, initial={"suite": request.GET.get("suite")})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = start_run(request.user, suite=data["suite"], contestants=data["contestants"], format=data["format"],
                            judges=data["judges"], judge_template=data["judge_template"], params=data["params"],
                            budget=data["budget"], reuse_answers=data["reuse_answers"])
        except RunError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect(run)
    return render(request, "suite_runs/new.html", {"form": form}, status=400 if form.errors else 200)


@login_required
@require_GET
def run_detail(request, run_id):
    run = access_run(request.user, run_id)
    # ?unreliable=include: the charts also from the verdicts of a judge marked unreliable, labelled.
    unreliable = request.GET.get("unreliable") == "include"
    return render(request, "suite_runs/run.html", report.with_charts(run, request.user, unreliable))


@login_required
@require_GET
def run_progress(request, run_id):
    """What the run page's poll (every 2 s while the run is live) swaps in: the progress and what
    changed since `seen` (what the page shows), or, once the run ended, the whole page, final."""
    run = access_run(request.user, run_id)
    return render(request, "suite_runs/_live.html", report.update(run, request.GET.get("seen", ""), request.user))


@login_required
@require_POST
def run_cancel(request, run_id):
    run = access_run(request.user, run_id)
    if run.live:
        runner.cancel(run)
    return redirect(run)


@login_required
@require_http_methods(["GET", "POST"])
def run_judge(request, run_id):
    """The next pair this user has not judged, blind; a vote stores it and shows the next. With
    none left (and the run over), or on "finish", the user's verdicts are revealed."""
    run = access_run(request.user, run_id)
    error = ""
    if request.method == "POST" and "finish" in request.POST:
        reveal_for(run, request.user)
        return redirect("suite-run-judge", run.id)
    if request.method == "POST":
        form = VoteForm(request.POST, run=run)
        try:
            if not form.is_valid():
                raise VerdictError(" ".join(str(e) for errs in form.errors.values() for e in errs))
            record_human_verdict(run, request.user, *form.verdict())
        except VerdictError as exc:
            error = str(exc)
        else:
            return redirect("suite-run-judge", run.id)
    pair = run.next_pair_for(request.user)
    if pair is None and not run.live:
        reveal_for(run, request.user)
    context = {"run": run, "pair": pair, "error": error, "revealed": _revealed(run, request.user)}
    if pair is not None:
        a_side = random.choice(("left", "right"))
        a, b = (pair.left, pair.right) if a_side == "left" else (pair.right, pair.left)
        context.update(a=a, b=b, token=pair_token(run, pair.left.id, pair.right.id, a_side))
    return render(request, "suite_runs/judge.html", context, status=409 if error else 200)


def _revealed(run: SuiteRun, user):
    return run.people_verdicts(user).filter(revealed=True).select_related("left__model", "right__model").order_by(
        "voted_at")


@login_required
@require_GET
def run_export_file(request, run_id, fmt):
    run = access_run(request.user, run_id)
    if fmt == "csv":
        return download(request, export.csv_chunks(run), "csv", export.filename(run, "answers", "csv"))
    chunks = export.json_document(run, request.build_absolute_uri)
    return download(request, chunks, "json", export.filename(run, "answers-verdicts", "json"))


@login_required
@require_GET
def run_export_comparator(request, run_id):
    """?pair=<a slug>,<b slug> (or ?a=&b=): the two contestants LLM Comparator compares (default:
    the first two); ?pair=all: every pair, one file each in a .zip."""
    run = access_run(request.user, run_id)
    pairs = export.comparator_choice(run, request.GET)
    if pairs is None:
        raise Http404("Name two different contestants of this run (pair=a,b), or pair=all.")
    if request.GET.get("pair") == export.EVERY_PAIR:
        response = HttpResponse(export.comparator_zip(run, pairs, request.build_absolute_uri),
                                content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{export.filename(run, "llm-comparator", "zip")}"'
        response["Cache-Control"] = "private, no-store"
        return response
    [(a, b)] = pairs
    chunks = export.comparator_document(run, a, b, request.build_absolute_uri)
    return download(request, chunks, "json", export.filename(run, f"llm-comparator-{a.slug}-vs-{b.slug}", "json"))
