"""A suite run compared with an earlier run of the same suite, read from the database for the
comparison page, the API (GET /api/v1/suite-runs/<id>/compare/<earlier_id>) and `arena_eval
--against`: both runs' answers as the pure core takes them (arena.suite_runs.comparison), the
pairs of contestants a request names, and the runs a run can be compared with. Both runs are
looked up by the caller through access_run (the owner's only)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from . import comparison as core
from .comparison import (
    Answer,
    CheckResult,
    Comparison,
    PairError,
    Prompt,
    RunAnswers,
    choose_pairs,
    compare,
)
from .models import SuiteAnswer, SuiteRun

MAX_PAIR_VALUES = SuiteRun.MAX_CONTESTANTS  # a `pair` value per later contestant at most


class CompareError(ValueError):
    """Two runs that cannot be compared, or pairs that cannot be; the message is fit for the user,
    `field` names what is wrong as the API's request calls it (earlier_id, pair)."""

    def __init__(self, message: str, field: str = "pair"):
        super().__init__(message)
        self.field = field


def run_answers(run: SuiteRun) -> RunAnswers:
    """What the core reads of a run: its contestants' slugs, its suite version's prompts (each
    with its own checks' specs, to tell a prompt whose checks changed) and every answer's
    outcome, check results and speeds."""
    prompts = tuple(Prompt(p.position, p.prompt, json.dumps(p.checks, sort_keys=True)) for p in run.prompts())
    rows = (SuiteAnswer.objects.filter(run=run)
            .values_list("prompt__position", "contestant__slug", "generation__status", "passed", "checks",
                         "generation__tokens_per_s", "generation__time_to_first_token_s",
                         "generation__cached_from_id"))
    answers = tuple(
        Answer(position, slug, status, passed,
               tuple(CheckResult(str(r.get("name", "")), bool(r.get("passed")), str(r.get("expected", "")),
                                 str(r.get("got", ""))) for r in (checks or [])),
               tokens_per_s, ttft_s, cached_from is not None)
        for position, slug, status, passed, checks, tokens_per_s, ttft_s, cached_from in rows)
    return RunAnswers(tuple(m.slug for m in run.contestants), prompts, answers)


def parse_pairs(values: Iterable[str]) -> list[tuple[str, str]]:
    """`pair` values, each "<later slug>:<earlier slug>" (or "<later slug>:" for none), as
    (later, earlier); CompareError for one that is not."""
    values = list(values)
    if len(values) > MAX_PAIR_VALUES:
        raise CompareError(f"Give at most {MAX_PAIR_VALUES} pair values, one per contestant of this run.")
    pairs = []
    for value in values:
        later, colon, earlier = value.partition(":")
        if not colon or not later:
            raise CompareError(f"pair takes <contestant of this run>:<contestant of the earlier run> (or "
                               f"<contestant>: for none), not {value[:100]!r}.")
        pairs.append((later, earlier))
    return pairs


def compared(run: SuiteRun, earlier: SuiteRun, chosen: Iterable[tuple[str, str]] = ()) -> Comparison:
    """`run` against `earlier` (both already the viewer's), each contestant of `run` against the
    earlier one `chosen` names, else the same entry; CompareError when they are not two runs of
    one suite or a pair is not one."""
    if run.id == earlier.id:
        raise CompareError("A run compared with itself changes nothing: pick another run of the suite.",
                           "earlier_id")
    if run.suite_id != earlier.suite_id:
        raise CompareError("These are runs of two different suites: a comparison takes two runs of one suite.",
                           "earlier_id")
    later_answers, earlier_answers = run_answers(run), run_answers(earlier)
    try:
        pairs = choose_pairs(later_answers.contestants, earlier_answers.contestants, chosen)
    except PairError as exc:
        raise CompareError(str(exc)) from None
    return compare(earlier_answers, later_answers, pairs)


def others(run: SuiteRun):
    """The runs `run` can be compared with: its owner's other runs of the same suite, newest first."""
    return (SuiteRun.objects.filter(owner=run.owner, suite=run.suite).exclude(id=run.id)
            .order_by("-created_at").prefetch_related("entrants__model"))


def run_json(run: SuiteRun) -> dict:
    """Which run a comparison's side is."""
    return {"id": str(run.id), "suite_version": run.suite_version, "state": run.state,
            "created_at": run.created_at.isoformat(), "contestants": [m.slug for m in run.contestants],
            "url": run.get_absolute_url()}


# --- the page -------------------------------------------------------------------------------------
UNCHANGED_SHOWN = 300  # unchanged answers listed on the page at most (the API gives them all)
CHANGED_SHOWN = 1000  # and changed ones (regressions first)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def _points(value: float | None) -> str:
    """A difference of shares in percentage points, signed."""
    return "—" if value is None else f"{100 * value:+.0f} pts"


def _bounds(bounds, fmt) -> str:
    return f"{fmt(bounds[0])} to {fmt(bounds[1])}" if bounds else ""


def _figure(value: float | None, unit: str, signed: bool = False) -> str:
    if value is None:
        return "—"
    digits = 2 if abs(value) < 10 else 1
    return f"{value:+.{digits}f} {unit}" if signed else f"{value:.{digits}f} {unit}"


def _reading(bounds, above: str, below: str, none: str = "too few to tell") -> str:
    """What an interval of a change shows: a change when it excludes 0, else none to speak of."""
    if not bounds:
        return none
    if bounds[0] > 0:
        return f"{above}: the interval excludes no change"
    if bounds[1] < 0:
        return f"{below}: the interval excludes no change"
    return "no clear change: the interval includes zero"


def page(run: SuiteRun, earlier: SuiteRun, found: Comparison) -> dict:
    """What the comparison page shows, in words and figures, each contestant by its label."""
    models = {m.slug: m for m in [*earlier.contestants, *run.contestants]}

    def label(slug: str) -> str:
        model = models.get(slug)
        return (getattr(model, "label", "") or model.name) if model else slug

    def pair_label(pair) -> str:
        return label(pair.later) if pair.later == pair.earlier else f"{label(pair.later)} (was {label(pair.earlier)})"

    rates = [{"pair": pair_label(r.pair), "slug": r.pair.later, "prompts": r.before.total,
              "before": f"{r.before.count} of {r.before.total} ({_pct(r.before.value)})",
              "after": f"{r.after.count} of {r.after.total} ({_pct(r.after.value)})",
              "change": _points(r.difference), "interval": _bounds(r.interval, _points),
              "reading": _reading(r.interval, "higher", "lower")}
             for r in found.rates]
    units = {"tokens_per_s": ("tok/s", "Decode speed (median tokens/s)"),
             "ttft_s": ("s", "Time to first token (median)")}
    speeds = [{"pair": pair_label(s.pair), "slug": s.pair.later, "measure": units[s.measure][1],
               "key": s.measure,
               "before": f"{_figure(s.before.value, units[s.measure][0])} ({s.before.n})",
               "after": f"{_figure(s.after.value, units[s.measure][0])} ({s.after.n})",
               "change": _figure(s.difference, units[s.measure][0], signed=True),
               "interval": _bounds(s.interval, lambda v, u=units[s.measure][0]: _figure(v, u, signed=True)),
               "ratio": f"×{s.ratio:.2f}" if s.ratio is not None else "",
               "reading": _reading(s.interval, *(("faster", "slower") if s.measure == "tokens_per_s"
                                                  else ("slower to start", "faster to start")),
                                   none=f"too few to tell: an interval needs {core.MIN_SPEEDS} answers a side")}
              for s in found.speeds]
    quiet = (core.STILL_PASSES, core.STILL_FAILS, core.NOT_COMPARED)
    listed = [{"change": c, "pair": pair_label(c.pair), "slug": c.pair.later} for c in found.changes
              if c.kind not in quiet]
    unchanged = [{"change": c, "pair": pair_label(c.pair), "slug": c.pair.later} for c in found.changes
                 if c.kind in quiet]
    ordered = sorted(found.checks, key=lambda c: (-c.now_fails, -c.now_passes, c.name))
    checks = [{"name": c.name, "pair": pair_label(c.pair), "slug": c.pair.later, "row": c} for c in ordered]
    counts = found.counts
    return {"run": run, "earlier": earlier, "found": found, "rates": rates, "speeds": speeds,
            "listed": listed[:CHANGED_SHOWN], "listed_more": max(0, len(listed) - CHANGED_SHOWN),
            "unchanged": unchanged[:UNCHANGED_SHOWN],
            "unchanged_more": max(0, len(unchanged) - UNCHANGED_SHOWN), "unchanged_total": len(unchanged),
            "check_rows": checks, "counts": counts,
            "regressions": counts[core.REGRESSED] + counts[core.CHECK_REGRESSED],
            "unmatched_later": [label(s) for s in found.unmatched_later],
            "unmatched_earlier": [label(s) for s in found.unmatched_earlier],
            "matching": core.MATCHING, "method": core.METHOD, "speed_method": core.SPEED_METHOD,
            "swapped": earlier.created_at > run.created_at, "partial": run.live or earlier.live}


def pair_choices(run: SuiteRun, earlier: SuiteRun, found: Comparison) -> list[dict]:
    """Per contestant of `run`, the earlier contestants it may stand for, the current one selected."""
    current = {p.later: p.earlier for p in found.pairs}
    before = earlier.contestants
    return [{"model": m, "options": [{"value": f"{m.slug}:{e.slug}", "model": e, "selected": current.get(m.slug)
                                      == e.slug} for e in before],
             "none": f"{m.slug}:", "none_selected": m.slug not in current} for m in run.contestants]
