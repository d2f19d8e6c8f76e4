"""Rubric checks graded by a judge model (arena.suites.checks, type "rubric"): the judge reads ONE
answer against the rubric and replies with constrained JSON ({"pass": ..., "reason": ...} or
{"score": 1..5, "reason": ...}).

An answer's checks are evaluated as it lands (arena.suite_runs.checking); a rubric check there
is *pending* (stored with `pending` and its `key`), and so is the answer's verdict (its `passed`
and `score` stay null: no pass rate counts it). Each runner step then calls `step`: for every
answer with a pending rubric check it starts the judges' generations (a run kind of its own,
GRADE_KIND, through the fair line like a pairwise judge's reading, the judge's decoding
constrained to the reply's schema, greedy), within the run's window of live generations; once
every grade of the check has settled it stores the check's result in its place on the answer
(`checks.graded`: a jury's majority, or the median of 1-5 grades), and once no check of the
answer is pending its verdict and score. A failed grade is tried again (plan.MAX_ATTEMPTS in
all); a judge whose every try failed abstains. The run ends only once no check is pending.

The judges: those the check names (catalogue slugs, checked at import), or else the run's own
(its judge and jury). Nothing from the suite runs as code: the rubric and the answer are quoted
data in the judge's prompt (checks.rubric_prompt), between markers the answer cannot forge.

Reliability, as for pairwise judges (`reliability`): on a sample of the answers (one in
REPEAT_EVERY, chosen by the run's seed) each judge grades the answer a second time with the
answer shown before the rubric; how often the two grades agree is its consistency (a grade that
changes with the layout says little). Where the owner judged pairs of the same answers blind and
revealed them, how often the rubric's grades side with the person on the pairs they grade apart
is its agreement with people. Each with its 95% Wilson interval, and a verdict in words.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arena.battles.models import Battle
from arena.catalogue.models import ModelEntry
from arena.generations import runs, tasks
from arena.generations.models import Generation
from arena.leaderboard import reliability as shares
from arena.suites import checks
from arena.suites.models import SuitePrompt

from .models import SuiteAnswer, SuiteGrade, SuiteRun
from .plan import MAX_ATTEMPTS

GRADE_KIND = "suite_grade"
REPEAT_EVERY = 4  # one answer in four is graded a second time, in the other layout
# Greedy, and room for the whole reply even if every token of the reason is one character (a
# sampled small model can ramble "8888..." up to the schema's maxLength): the JSON then always
# closes. A reply usually takes 20 to 40 tokens.
MAX_NEW_TOKENS = 24 + 2 * checks.RUBRIC_REASON_CHARS
CONSISTENCY_LIMIT = 0.75  # a judge agreeing with itself less often than this across layouts is unreliable
PEOPLE_LIMIT = 0.5  # ... and one siding with people less often than this
CONSTANT_LIMIT = 0.95  # ... and one giving (nearly) every answer the same pass or fail
MIN_REPEATS = shares.MIN_PAIRS
RELIABLE, UNRELIABLE, NOT_ENOUGH = shares.RELIABLE, shares.UNRELIABLE, shares.NOT_ENOUGH

NOT_GRADED = "not graded: the run had ended (a re-check generates nothing; a new run grades it)"
Start = Callable[[SuiteRun, str, ModelEntry, str, dict], Generation | None]


def register_run_kind() -> None:
    """SuiteRunsConfig.ready() calls this: a grade is a judging generation (never counted as the
    judge's own results), started by the generation core's task."""
    runs.register(runs.RunKind(GRADE_KIND, start=tasks.start_run, judging=True))


def params(judge: ModelEntry, scale: str) -> dict:
    """The judge's sampling: greedy, short, its reply constrained to the grade's schema."""
    return judge.params_with_defaults({"temperature": 0.0, "max_new_tokens": MAX_NEW_TOKENS,
                                       "json_schema": checks.rubric_schema(scale)}).to_dict()


def repeated(run: SuiteRun, answer: SuiteAnswer, key: str) -> bool:
    """Whether this answer's grade is repeated in the other layout (a sample the run's seed draws)."""
    return zlib.crc32(f"{run.seed}:{answer.prompt_id}:{answer.contestant_id}:{key}".encode()) % REPEAT_EVERY == 0


def start_problem(suite, run_judges: list) -> str:
    """Why a run of `suite` with these judges cannot grade its rubric checks ("" if it can): a check
    that names no judge needs the run to have one (arena.suite_runs.actions checks this when a run
    starts). Specs that do not parse now are left to the checks' own message when answers land."""
    if run_judges:
        return ""
    for specs in [suite.default_checks, *suite.ordered_prompts().values_list("checks", flat=True)]:
        for spec in specs or ():
            if isinstance(spec, dict) and spec.get("type") == "rubric" and not spec.get("judge"):
                name = spec.get("name") or "rubric"
                return (f"The suite's rubric check '{name}' names no judge: choose a judge for the run, or name one "
                        "in the check's 'judge'.")
    return ""


@dataclass
class Progress:
    """What a step of grading found: grades started now, answers still waiting for a grade, and
    the run's grades settled of all it has wanted so far (its share of the progress bar)."""

    started: int = 0
    waiting: int = 0
    settled: int = 0
    total: int = 0


class _Suite:
    """The run's suite checks per prompt, parsed once a step, and the catalogue entries they name."""

    def __init__(self, run: SuiteRun):
        self.run = run
        self.by_prompt: dict[int, dict[str, checks.Check]] = {}
        self.run_judges = run.judges
        self.entries: dict[str, ModelEntry] = {}

    def check(self, prompt: SuitePrompt, key: str) -> checks.Check | None:
        if prompt.id not in self.by_prompt:
            try:
                found = checks.parse_all([*self.run.suite.default_checks, *prompt.checks])
            except checks.CheckError:
                found = []
            self.by_prompt[prompt.id] = {checks.rubric_key(c): c for c in found if c.type == "rubric"}
        return self.by_prompt[prompt.id].get(key)

    def judges(self, check: checks.Check) -> list[ModelEntry] | str:
        named = check.params["judges"]
        if not named:
            return self.run_judges or "the check names no judge and the run has none"
        missing = [slug for slug in named if slug not in self.entries]
        if missing:
            self.entries.update({e.slug: e for e in ModelEntry.objects.filter(slug__in=missing)})
        out = [self.entries.get(slug) for slug in named]
        gone = [slug for slug, entry in zip(named, out, strict=True) if entry is None or not entry.enabled]
        if gone:
            return f"the judge {gone[0]!r} is not an enabled catalogue entry"
        return [entry for entry in out if entry is not None]


def _settled(row: SuiteGrade) -> bool:
    status = row.generation.status
    return status == Generation.Status.DONE or (status in Generation.FINISHED and row.attempts >= MAX_ATTEMPTS)


def _wants_start(row: SuiteGrade | None) -> bool:
    if row is None:
        return True
    status = row.generation.status
    return status in Generation.FINISHED and status != Generation.Status.DONE and row.attempts < MAX_ATTEMPTS


def live(run: SuiteRun) -> int:
    """The run's grades generating now (they count in its window of live generations)."""
    return SuiteGrade.objects.filter(run=run, generation__status__in=Generation.live_statuses()).count()


def step(run: SuiteRun, room: int, start: Start | None) -> Progress:
    """Grade what waits: start at most `room` generations (`start`: the runner's, which reuses an
    identical request's answer; None: start nothing, only store what has landed), store each
    check whose grades all settled, and each answer's verdict once none of its checks waits."""
    progress = Progress()
    waiting = [a for a in _unsettled(run).select_related("prompt", "generation").order_by("id")
               if any(r.get("pending") for r in a.checks)]
    rows = {(row.answer_id, row.key, row.judge_id, row.layout): row
            for row in SuiteGrade.objects.filter(answer__in=[a.id for a in waiting]).select_related("generation")}
    suite = _Suite(run)
    for answer in waiting:
        results = [checks.Result.from_json(r) for r in answer.checks]
        changed = False
        for index, result in enumerate(results):
            if not result.pending:
                continue
            graded, started = _grade(run, answer, result, suite, rows, room, start)
            room -= started
            progress.started += started
            if graded is not None:
                results[index], changed = graded, True
        verdict = checks.verdict(results)
        progress.waiting += verdict.pending != ()
        if changed:  # a check graded: stored in its place, and the verdict once none waits
            answer.checks = [r.as_json() for r in results]
            answer.passed, answer.score = verdict.passed, verdict.score
            answer.save(update_fields=["checks", "passed", "score"])
    rows_of_run = SuiteGrade.objects.filter(run=run)
    progress.settled = (rows_of_run.filter(generation__status=Generation.Status.DONE).count()
                        + rows_of_run.filter(generation__status__in=[Generation.Status.FAILED,
                                                                     Generation.Status.CANCELLED],
                                             attempts__gte=MAX_ATTEMPTS).count())
    progress.total = rows_of_run.count() + progress.waiting  # at least one grade each still to come
    return progress


def _grade(run: SuiteRun, answer: SuiteAnswer, result: checks.Result, suite: _Suite, rows: dict, room: int,
           start: Start | None) -> tuple[checks.Result | None, int]:
    """One pending rubric check of `answer`: (its graded result once every grade settled, else
    None; how many generations it started)."""
    check = suite.check(answer.prompt, result.key)
    if check is None:  # the suite's default checks changed since the answer was checked
        return _not_evaluated(result, "the suite's checks changed since; check the run again"), 0
    judges = suite.judges(check)
    if isinstance(judges, str):
        return _not_evaluated(result, judges), 0
    layouts = checks.LAYOUTS if repeated(run, answer, result.key) else (checks.GRADED_LAYOUT,)
    started, settled = 0, True
    for judge in judges:
        for layout in layouts:
            row = rows.get((answer.id, result.key, judge.id, layout))
            if _wants_start(row):
                settled = False
                if start is not None and room - started > 0:
                    started += _start(run, answer, check, result.key, judge, layout, row, start)
            elif row is not None and not _settled(row):
                settled = False
    if not settled:
        if start is None and not run.live:
            return _not_evaluated(result, NOT_GRADED), started
        return None, started
    grades: list[dict[str, Any]] = []
    stored = []
    for judge in judges:
        for layout in layouts:
            row = rows[(answer.id, result.key, judge.id, layout)]
            text = row.generation.text if row.generation.status == Generation.Status.DONE else ""
            grade, reason = checks.read_grade(check.params["scale"], text) if text else (None, "")
            row.grade = None if grade is None else int(grade)
            row.passes = None if grade is None else (grade if check.params["scale"] == "pass"
                                                     else grade >= (check.threshold or 0))
            stored.append(row)
            if layout == checks.GRADED_LAYOUT:
                failed = row.generation.failure_reason if row.generation.status != Generation.Status.DONE else ""
                grades.append({"judge": judge.slug, "grade": grade, "reason": reason,
                               "generation": str(row.generation_id), **({"failed": failed} if failed else {})})
    SuiteGrade.objects.bulk_update(stored, ["grade", "passes"])
    return checks.graded(check, grades), started


def _not_evaluated(result: checks.Result, why: str) -> checks.Result:
    return checks.Result(result.name, result.type, False, 0.0, result.weight, result.expected, "not evaluated",
                         why, key=result.key)


def _start(run: SuiteRun, answer: SuiteAnswer, check: checks.Check, key: str, judge: ModelEntry, layout: str,
           row: SuiteGrade | None, start: Start) -> int:
    text = checks.rubric_prompt(check, question=answer.prompt.prompt, answer=answer.generation.text,
                                reference=answer.prompt.reference, layout=layout)
    gen = start(run, GRADE_KIND, judge, text, params(judge, check.params["scale"]))
    if gen is None:
        return 0  # an identical grade of this run is under way: a later step takes its reply
    if row is None:
        SuiteGrade.objects.create(run=run, answer=answer, key=key, scale=check.params["scale"], judge=judge,
                                  layout=layout, generation=gen)
    else:
        row.generation, row.attempts = gen, row.attempts + 1
        row.save(update_fields=["generation", "attempts"])
    return 1


def live_generation_ids(run: SuiteRun) -> list:
    """The run's grades still generating (a cancel stops them)."""
    return list(SuiteGrade.objects.filter(run=run, generation__status__in=Generation.live_statuses())
                .values_list("generation_id", flat=True))


# --- how reliable the rubric judges are ----------------------------------------------------------
def _share_json(share: shares.Share) -> dict:
    return {"count": share.count, "total": share.total, "value": share.value, "interval": share.interval}


def reliability(run: SuiteRun) -> list[dict]:
    """Per judge that graded this run's rubric checks (in the order they first graded): how often
    its grade agreed across the two layouts (`consistent`, on the sample graded twice), how often
    it passed an answer (`passes`), how often its grades sided with the owner's revealed blind
    verdicts on pairs of the same answers that it graded apart (`people`), each a Share, and its
    verdict in words (RELIABLE, UNRELIABLE, NOT_ENOUGH, and the sentence)."""
    rows = list(SuiteGrade.objects.filter(run=run, passes__isnull=False).select_related("judge", "answer")
                .order_by("id"))
    if not rows:
        return []
    by_judge: dict[int, dict] = {}
    for row in rows:
        entry = by_judge.setdefault(row.judge_id, {"judge": row.judge, "layouts": {}, "primary": {}})
        entry["layouts"].setdefault((row.answer_id, row.key), {})[row.layout] = row.passes
        if row.layout == checks.GRADED_LAYOUT:
            entry["primary"][(row.answer.generation_id, row.key)] = (row.grade, row.passes)
    people = list(Battle.objects.filter(mode=Battle.Mode.SUITE, judge__isnull=True, revealed=True, owner=run.owner,
                                        left_id__in=SuiteAnswer.objects.filter(run=run).values("generation_id"))
                  .values_list("left_id", "right_id", "outcome"))
    out = []
    for entry in by_judge.values():
        twice = [both for both in entry["layouts"].values() if len(both) == 2]
        consistent = shares.Share(sum(both[checks.GRADED_LAYOUT] == both[checks.REPEAT_LAYOUT] for both in twice),
                                  len(twice))
        primary = entry["primary"]
        passes = shares.Share(sum(bool(p) for _, p in primary.values()), len(primary))
        people_share = _people(primary, people)
        verdict, sentence = _verdict(consistent, passes, people_share)
        judge = entry["judge"]
        out.append({"judge": judge, "slug": judge.slug, "consistent": consistent, "passes": passes,
                    "people": people_share, "verdict": verdict, "sentence": sentence})
    return out


def _people(primary: dict, people: list) -> shares.Share:
    """On each decisive blind verdict whose two answers this judge graded apart (a higher grade,
    on a check of the same key): whether the person preferred the answer the rubric graded higher."""
    keys = {key for _, key in primary}
    agreed = total = 0
    for left, right, outcome in people:
        if outcome not in ("left", "right"):
            continue
        for key in keys:
            a, b = primary.get((left, key)), primary.get((right, key))
            if a is None or b is None or a[0] == b[0]:
                continue
            total += 1
            agreed += (a[0] > b[0]) == (outcome == "left")
    return shares.Share(agreed, total)


def _of(share: shares.Share, noun: str) -> str:
    return f"{share.count} of {share.total} {noun}{'' if share.total == 1 else 's'}"


def _verdict(consistent: shares.Share, passes: shares.Share, people: shares.Share) -> tuple[str, str]:
    if consistent.below(CONSISTENCY_LIMIT):
        return UNRELIABLE, (f"Its grade stayed the same when the answer was shown before the rubric on only "
                            f"{_of(consistent, 'answer')} graded twice: its grades follow the prompt's layout.")
    if people.below(PEOPLE_LIMIT):
        return UNRELIABLE, (f"Its grades sided with your blind verdicts on only {_of(people, 'pair')} it graded "
                            "apart.")
    failed = shares.Share(passes.total - passes.count, passes.total)
    for said, share in (("passed", passes), ("failed", failed)):
        if share.above(CONSTANT_LIMIT):
            return UNRELIABLE, f"It {said} {_of(share, 'answer')}: its grades tell almost no answer from another."
    if consistent.total < MIN_REPEATS:
        done = (f"Only {consistent.total} answer{'' if consistent.total == 1 else 's'} graded twice so far"
                if consistent.total else "No answer graded twice yet")
        return NOT_ENOUGH, (f"{done} (about one in {REPEAT_EVERY} is, with the rubric shown first), of the "
                            f"{MIN_REPEATS} needed to call it reliable.")
    return RELIABLE, f"Its grade stayed the same across the two layouts on {_of(consistent, 'answer')}."


def _unsettled(run: SuiteRun):
    """The run's checked answers without a verdict: those waiting for a grade (an answer whose
    prompt has no check has none either, and is left out here)."""
    return SuiteAnswer.objects.filter(run=run, checked_at__isnull=False, passed__isnull=True).exclude(checks=[])


def waiting(run: SuiteRun) -> int:
    """The run's answers whose verdict waits for a rubric grade."""
    rows = _unsettled(run).values_list("checks", flat=True)
    return sum(1 for results in rows if any(r.get("pending") for r in results))


def state(run: SuiteRun) -> dict:
    """What the run page shows of its rubric checks: the answers waiting, each judge's reliability
    (with its three shares in the table's order)."""
    judges = [{**row, "shares": (row["consistent"], row["passes"], row["people"])} for row in reliability(run)]
    return {"waiting": waiting(run), "judges": judges}


def reliability_json(rows: list[dict]) -> list[dict]:
    return [{"judge": row["slug"], "verdict": row["verdict"], "sentence": row["sentence"],
             "consistent": _share_json(row["consistent"]), "passes": _share_json(row["passes"]),
             "people": _share_json(row["people"])} for row in rows]
