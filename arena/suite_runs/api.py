"""The suite-run endpoints of the JSON API: start a run, list mine, read one (with its checks'
pass rates per contestant, check and tag, and its answers' cost), read its answers (each with its
checks' results), check its answers again (after the suite's checks changed), cancel it.

The request's shape (types, slugs, the caller's suite) is read here; whether the run can
start is arena.suite_runs.actions.start_run's to say, as for the page: its RunError names the
field. Its owner cancels and re-checks a run; its team's members read it (a write of theirs: 403
`read_only`); anyone else: 404."""

from __future__ import annotations

import functools
import uuid

from django.http import JsonResponse

from arena.access import NotFound
from arena.accounts.bearer import token_required
from arena.api.http import created, error, json_body, methods
from arena.api.params import NotAnObject, params_object
from arena.battles.judging import MAX_JUDGES
from arena.catalogue.models import ModelEntry
from arena.suites.access import access_suite
from arena.suites.models import Suite
from arena.teams import membership
from arena.teams.membership import whose

from . import comparing, comparison, report, rubric, runner
from .access import access_run
from .actions import RunError, start_recheck, start_run
from .models import SuiteRun

CREATE_FIELDS = {"suite", "contestants", "format", "judge", "judges", "judge_template", "params", "budget",
                 "reuse_answers"}
PARAM_FIELDS = {"temperature", "top_p", "max_new_tokens"}
UNRELIABLE_VALUE = ("unreliable takes only 'include' (the decision also from the verdicts of a judge marked "
                    "unreliable), not {value!r}; leave it out to leave them out.")


class Refused(Exception):
    """A request the API refuses: `status`, a message and the field it names."""

    def __init__(self, field: str, message: str, status: int = 400):
        super().__init__(message)
        self.field, self.status = field, status

    def response(self) -> JsonResponse:
        code = "invalid_params" if self.field == "params" and self.status == 400 else None  # else by status
        return error(self.status, str(self), {self.field: str(self)}, code=code)


# --- the JSON of a run ----------------------------------------------------------------------
def summary_json(run: SuiteRun) -> dict:
    return {"id": str(run.id), **whose(run), "suite": str(run.suite_id), "suite_version": run.suite_version,
            "suite_versions": run.suite.version, "format": run.format,
            "judge": run.judge.slug if run.judge else None, "judges": [m.slug for m in run.judges],
            "state": run.state, "reuse_answers": run.reuse_answers,
            "progress": {"done": run.done, "total": run.total, "percent": run.percent, "eta_s": run.eta_s},
            "adaptive": adaptive_json(run),
            "created_at": run.created_at.isoformat(),
            "finished_at": run.finished_at.isoformat() if run.finished_at else None,
            "url": run.get_absolute_url()}


def adaptive_json(run: SuiteRun) -> dict | None:
    """An adaptive run's judge calls spent of its budget and why it stopped ("" while it goes on)."""
    if not run.adaptive:
        return None
    return {"budget": run.call_budget, "calls": run.judge_calls, "stop_reason": run.stop_reason,
            "stopped_because": run.get_stop_reason_display() if run.stop_reason else ""}


def result_json(row: dict) -> dict:
    return {**row, "model": row["model"].slug}


def run_json(run: SuiteRun, user, unreliable: bool = False) -> dict:
    """A run with its results, how often its judges agreed with themselves across the two orders
    (None: no judge, or no pair judged yet), each judge's reliability on this run's pairs, and what
    to pick from its verdicts (None while it is live or has none; an unreliable judge's verdicts
    only if asked, `unreliable`, as on its page)."""
    judged = list(report.judged_pairs(run))
    rows = report.judge_reliability(run, judged)
    summary = report.decision_summary(run, user, unreliable, rows)
    return {**summary_json(run), "results": [result_json(row) for row in run.results()],
            "checks": report.check_rates_json(report.check_rates(run)),
            "rubric_reliability": rubric.reliability_json(rubric.reliability(run)),
            "judge_agreement": report.judge_agreement(judged, rows),
            "judge_reliability": reliability_json(rows) if run.judge_id else None,
            "decision": summary.as_json() if summary else None}


def reliability_json(rows: dict) -> dict:
    """Per judge its pairs and figures (each share also as counts with its 95% interval), its
    verdict (reliable, unreliable, not enough readings) and why, kappa with people and its
    interval (null: too few pairs); every two judges' kappa; the threshold below which kappa is
    not given."""
    return {"min_pairs": rows["min_pairs"],
            "judges": [{"judge": row["slug"], "pairs": row["pairs"], "readings": row["readings"], **row["figures"]}
                       for row in rows["judges"]],
            "between": [{"a": row["a_slug"], "b": row["b_slug"], **row["figures"]} for row in rows["between"]]}


# --- reading a request ----------------------------------------------------------------------
def _suite(user, value) -> Suite:
    if value is None:
        raise Refused("suite", "suite is required: the id of one of your prompt suites.")
    try:
        suite_id = uuid.UUID(value) if isinstance(value, str) else None
    except ValueError:
        suite_id = None
    try:
        return access_suite(user, suite_id)
    except NotFound as exc:  # a field of the body, named as every field's refusal is
        raise Refused("suite", str(exc), status=404) from None


def _model(field: str, slug) -> ModelEntry:
    found = ModelEntry.objects.enabled().filter(slug=slug).first() if isinstance(slug, str) else None
    if found is None:
        raise Refused(field, f"{field}: no enabled catalogue model has the slug {slug!r}.")
    return found


def _contestants(value) -> list[ModelEntry]:
    if not isinstance(value, list) or len(value) > SuiteRun.MAX_CONTESTANTS:
        raise Refused("contestants", f"contestants must be a list of {SuiteRun.MIN_CONTESTANTS} to "
                                     f"{SuiteRun.MAX_CONTESTANTS} catalogue slugs, in order.")
    return [_model("contestants", slug) for slug in value]


def _judges(value) -> list[ModelEntry]:
    if value is None:
        return []
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_JUDGES:
        raise Refused("judges", f"judges must be a list of 1 to {MAX_JUDGES} catalogue slugs (or null: see judge).")
    return [_model("judges", slug) for slug in value]


def _params(body: dict) -> dict:
    try:
        value = params_object(body)
    except NotAnObject as exc:
        raise Refused("params", str(exc)) from None
    if unknown := sorted(set(value) - PARAM_FIELDS):
        raise Refused("params", f"params: unknown parameter(s) {', '.join(unknown)}; a run takes "
                                f"{', '.join(sorted(PARAM_FIELDS))}.")
    return {name: v for name, v in value.items() if v is not None}  # its ranges: start_run, per contestant


def _budget(value) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise Refused("budget", "budget must be a whole number of judge calls (or null: half a round robin's).")
    return value


def _reuse(value) -> bool:
    if value is not None and not isinstance(value, bool):
        raise Refused("reuse_answers", "reuse_answers must be true or false (or null: false).")
    return bool(value)


def _text(body: dict, field: str, default: str) -> str:
    value = body.get(field)
    if value is None:
        return default
    if not isinstance(value, str):
        raise Refused(field, f"{field} must be a string.")
    return value


def _start(request) -> SuiteRun:
    try:
        body = json_body(request)
    except ValueError as exc:
        raise Refused("body", str(exc)) from None
    if unknown := sorted(set(body) - CREATE_FIELDS):
        raise Refused(unknown[0], f"Unknown field(s): {', '.join(unknown)}.")
    suite = _suite(request.user, body.get("suite"))
    contestants = _contestants(body.get("contestants"))
    judge = None if body.get("judge") is None else _model("judge", body["judge"])
    judges = _judges(body.get("judges"))
    try:
        return start_run(request.user, suite=suite, contestants=contestants, judge_model=judge, judges=judges,
                         format=_text(body, "format", SuiteRun.Format.ROUND_ROBIN),
                         judge_template=_text(body, "judge_template", ""), params=_params(body),
                         budget=_budget(body.get("budget")), reuse_answers=_reuse(body.get("reuse_answers")))
    except RunError as exc:
        raise Refused(exc.field, str(exc)) from None


def _unreliable(request) -> bool:
    """?unreliable=include: the decision also from the verdicts of a judge marked unreliable."""
    value = request.GET.get("unreliable")
    if value not in (None, "include"):
        raise Refused("unreliable", UNRELIABLE_VALUE.format(value=value))
    return value == "include"


def refusing(view):
    """`view`, with a Refused request answered by its error response."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except Refused as exc:
            return exc.response()

    return wrapper


# --- the endpoints --------------------------------------------------------------------------
@methods("GET", "POST")
@token_required
@refusing
def suite_runs(request):
    if request.method == "POST":
        run = _start(request)
        return created(run_json(run, request.user), f"/api/v1/suite-runs/{run.id}")
    scope = membership.api_scope(request.user, request.GET.get("scope"))
    runs = (SuiteRun.objects.filter(membership.in_scope(request.user, scope)).select_related("judge", "owner", "team")
            .order_by("-created_at"))
    return JsonResponse({"suite_runs": [summary_json(run) for run in runs]})


@methods("GET")
@token_required
@refusing
def suite_run(request, run_id):
    run = access_run(request.user, run_id, change=False)
    return JsonResponse(run_json(run, report.verdicts_of(run, request.user), _unreliable(request)))


def answer_json(answer) -> dict:
    return {"prompt_position": answer.prompt.position, "contestant": answer.contestant.slug,
            "status": answer.generation.status, "attempts": answer.attempts, "generation_id": str(answer.generation_id),
            "passed": answer.passed, "score": answer.score, "checks": answer.checks}


@methods("GET")
@token_required
@refusing
def answers(request, run_id):
    run = access_run(request.user, run_id, change=False)
    place = {m.id: i for i, m in enumerate(run.contestants)}
    rows = run.answers.select_related("prompt", "contestant", "generation")
    ordered = sorted(rows, key=lambda a: (a.prompt.position, place[a.contestant_id]))
    return JsonResponse({"answers": [answer_json(a) for a in ordered]})


@methods("GET")
@token_required
@refusing
def compare(request, run_id, earlier_id):
    """The run against an earlier run of its suite (arena.suite_runs.comparison); ?pair=<this run's
    contestant>:<the earlier run's> (repeated) says who stands for whom, else the same entries."""
    run = access_run(request.user, run_id, change=False)
    earlier = access_run(request.user, earlier_id, change=False)
    try:
        found = comparing.compared(run, earlier, comparing.parse_pairs(request.GET.getlist("pair")))
    except comparing.CompareError as exc:
        raise Refused(exc.field, str(exc)) from None
    return JsonResponse({"run": comparing.run_json(run), "earlier": comparing.run_json(earlier),
                         "partial": run.live or earlier.live, **comparison.as_json(found)})


@methods("POST")
@token_required
@refusing
def cancel(request, run_id):
    run = access_run(request.user, run_id)
    if not run.live:
        raise Refused("id", f"This run has already ended ({run.state}).", status=409)
    runner.cancel(run)
    return JsonResponse(run_json(run, request.user))


@methods("POST")
@token_required
@refusing
def recheck(request, run_id):
    """Every finished answer checked again against the suite's checks now (after its checks were
    changed): nothing is generated. The run, with `rechecked` (answers checked before answering)
    and `pending` (left to the background: a suite whose checks are slow)."""
    run = access_run(request.user, run_id)
    started = start_recheck(run)
    return JsonResponse({**run_json(run, request.user), "rechecked": started.checked, "pending": started.pending})
