"""The suite run pages: my runs, a new run, a run (with its live progress fragment, cancel and
exports) and people judging its pairs blind. Its owner changes a run (cancel, re-check, judge);
the members of its team open its pages and exports read-only; anyone else gets a 404. The
behaviour lives on SuiteRun (arena.suites.models) and in arena.suite_runs.report."""

from __future__ import annotations

import random

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from arena.access import may_change, visible_to
from arena.battles import anonymous
from arena.generations.export import download
from arena.teams import membership

from . import comparing, export, matrix, report, runner
from .access import access_run
from .actions import RunError, record_human_verdict, reveal_for, start_recheck, start_run
from .forms import SuiteRunForm, VoteForm, pair_token
from .models import SuiteRun, VerdictError


@login_required
@require_GET
def run_list(request):
    """?scope=mine (the default): the viewer's runs; ?scope=team: every member's in their current team."""
    scope, team = membership.list_scope(request.user, request.GET.get("scope"))
    runs = (SuiteRun.objects.filter(membership.in_scope(request.user, scope))
            .select_related("suite", "judge", "owner")[:100])
    return render(request, "suite_runs/list.html", {"runs": runs, "scope": scope, "team": team})


@login_required
@require_http_methods(["GET", "POST"])
def run_new(request):
    """The form; `?arena=1` fills it in for people to judge the suite's answers from the anonymous
    arena's models (its draw's pool), blind, through rater links made on the run's page."""
    initial = {"suite": request.GET.get("suite")}
    arena = request.GET.get("arena") == "1"
    if arena:
        slugs = list(anonymous.pool().order_by("slug").values_list("slug", flat=True)[:SuiteRun.MAX_CONTESTANTS])
        initial.update({f"contestant_{i}": slug for i, slug in enumerate(slugs, start=1)})
    form = SuiteRunForm(request.POST or None, owner=request.user, initial=initial)
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
    return render(request, "suite_runs/new.html", {"form": form, "arena": arena}, status=400 if form.errors else 200)


@login_required
@require_GET
def run_detail(request, run_id):
    run = access_run(request.user, run_id, change=False)
    # ?unreliable=include: the charts also from the verdicts of a judge marked unreliable, labelled.
    unreliable = request.GET.get("unreliable") == "include"
    context = report.with_charts(run, report.verdicts_of(run, request.user), unreliable)
    return render(request, "suite_runs/run.html", {**context, "can_change": may_change(request.user, run)})


@login_required
@require_GET
def run_progress(request, run_id):
    """What the run page's poll (every 2 s while the run is live) swaps in: the progress and what
    changed since `seen` (what the page shows), or, once the run ended, the whole page, final."""
    run = access_run(request.user, run_id, change=False)
    context = report.update(run, request.GET.get("seen", ""), report.verdicts_of(run, request.user))
    return render(request, "suite_runs/_live.html", {**context, "can_change": may_change(request.user, run)})


@login_required
@require_GET
def run_matrix(request, run_id):
    """The pass matrix: prompts by contestants, each answer's checks in a cell (arena.suite_runs.matrix);
    ?tag=, ?failing=1, ?page=."""
    run = access_run(request.user, run_id, change=False)
    context = matrix.matrix(run, matrix.Query.of(request.GET))
    return render(request, "suite_runs/matrix.html", {**context, "can_change": may_change(request.user, run)})


@login_required
@require_POST
def run_recheck(request, run_id):
    """Check every finished answer again against the suite's checks now; nothing is generated."""
    run = access_run(request.user, run_id)
    start_recheck(run)  # the Checks section says when answers were last checked, and how many wait
    return redirect(f"{run.get_absolute_url()}#suite-run-checks")


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
    error, form = "", None
    if request.method == "POST" and "finish" in request.POST:
        reveal_for(run, request.user)
        return redirect("suite-run-judge", run.id)
    if request.method == "POST":
        form = VoteForm(request.POST, run=run)
        try:
            if not form.is_valid():
                raise VerdictError(" ".join(str(e) for errs in form.errors.values() for e in errs))
            record_human_verdict(run, request.user, *form.verdict(), form.note)
        except VerdictError as exc:
            error = str(exc)
        else:
            return redirect("suite-run-judge", run.id)
    pair = run.next_pair_for(request.user)
    if pair is None and not run.live:
        reveal_for(run, request.user)
    context = {"run": run, "pair": pair, "error": error, "revealed": _revealed(run, request.user),
               "note_form": form if error else None}
    if pair is not None:
        a_side = random.choice(("left", "right"))
        a, b = (pair.left, pair.right) if a_side == "left" else (pair.right, pair.left)
        context.update(a=a, b=b, token=pair_token(run, pair.left.id, pair.right.id, a_side))
    return render(request, "suite_runs/judge.html", context, status=409 if error else 200)


@login_required
@require_GET
def run_compare_pick(request, run_id):
    """The owner's other runs of the run's suite that the viewer may open, each a link to its
    comparison with this one (the later run first, whichever page it was picked from)."""
    run = access_run(request.user, run_id, change=False)
    rows = [{"other": other, "url": reverse("suite-run-compare", args=(run.id, other.id) if other.created_at <=
                                            run.created_at else (other.id, run.id)),
             "earlier": other.created_at <= run.created_at}
            for other in comparing.others(run).filter(visible_to(request.user))[:100]]
    context = {"run": run, "rows": rows, "can_change": may_change(request.user, run)}
    return render(request, "suite_runs/compare_pick.html", context)


@login_required
@require_GET
def run_compare(request, run_id, earlier_id):
    """The run against an earlier run of its suite; ?pair=<this run's slug>:<the earlier's> (one per
    contestant, from the form's selects) says who stands for whom, else the same entries."""
    run = access_run(request.user, run_id, change=False)
    earlier = access_run(request.user, earlier_id, change=False)
    can_change = may_change(request.user, run)
    try:
        found = comparing.compared(run, earlier, comparing.parse_pairs(request.GET.getlist("pair")))
    except comparing.CompareError as exc:
        if exc.field == "earlier_id":  # nothing to show but why
            return render(request, "suite_runs/compare.html", {"run": run, "earlier": earlier, "error": str(exc),
                                                               "found": None, "can_change": can_change}, status=400)
        found, error = comparing.compared(run, earlier), str(exc)
    else:
        error = ""
    context = {**comparing.page(run, earlier, found), "error": error, "can_change": can_change,
               "choices": comparing.pair_choices(run, earlier, found)}
    return render(request, "suite_runs/compare.html", context, status=400 if error else 200)


def _revealed(run: SuiteRun, user):
    return run.people_verdicts(user).filter(revealed=True).select_related("left__model", "right__model").order_by(
        "voted_at")


@login_required
@require_GET
def run_export_file(request, run_id, fmt):
    run = access_run(request.user, run_id, change=False)
    if fmt == "csv":
        return download(request, export.csv_chunks(run), "csv", export.filename(run, "answers", "csv"))
    chunks = export.json_document(run, request.build_absolute_uri)
    return download(request, chunks, "json", export.filename(run, "answers-verdicts", "json"))


@login_required
@require_GET
def run_export_comparator(request, run_id):
    """?pair=<a slug>,<b slug> (or ?a=&b=): the two contestants LLM Comparator compares (default:
    the first two); ?pair=all: every pair, one file each in a .zip."""
    run = access_run(request.user, run_id, change=False)
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
