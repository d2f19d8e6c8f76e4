"""What a suite run's page shows besides its progress and results: the answers grid (each
answer's checks passed or failed, the failing ones named with what they expected and got), the
pass rates of the checks per contestant with their 95% Wilson intervals and per check
(`check_rates`), each contestant's failures, the judged pairs with every judge's two readings (order shown, verdict,
reason), how often the judges agreed with themselves across the two orders and each judge's
reliability (arena.leaderboard.reliability), and the quality-against-speed charts from the run's own
answers (the leaderboard's chart code, arena.leaderboard).

While a run is live its page polls `update` (the progress fragment's hx-get, every 2 s). The
poll's URL carries what the page shows (`seen`: each answer's status and attempt, and how many
judged pairs), so the reply swaps in (hx-swap-oob) only the answers that changed and appends
only the new judged pairs: an answer the user opened stays open. Once the run has ended the
reply is every part of the page, final (controls without Cancel, answers, pairs, charts), and
carries no trigger, so the polling stops."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from typing import Any, NamedTuple

from arena.access import may_change
from arena.battles.models import Battle
from arena.catalogue import pricing
from arena.generations.models import Generation
from arena.leaderboard import decision, frontier, judges, measures, picks, ratings, reliability
from arena.leaderboard.records import SCORES, names
from arena.suites.parsing import MAX_PROMPTS

from . import rubric
from .models import SuiteAnswer, SuiteRun

UNRELIABLE_LEFT_OUT = ("No pick: {names} {verb} marked unreliable, and every verdict of this run counted {pronoun} "
                       "readings, so they say little about the answers. Show them anyway to see what they would "
                       "pick, labelled.")
DECISION_SCOPE = ("From this run's verdicts alone: the contenders are the contestants whose 95% interval overlaps "
                  "the top one's or whose rank range includes 1st; speeds are medians over this run's answers.")
MAX_CELLS = MAX_PROMPTS * SuiteRun.MAX_CONTESTANTS  # a `seen` longer than any grid is not read


def _answers(run: SuiteRun):
    return SuiteAnswer.objects.filter(run=run).select_related("generation__model", "prompt")


class Cell(NamedTuple):
    """One contestant's answer to one prompt on the page: its element's id, the answer (None: not
    started) and its mark in `seen` (status letter and attempt: it changes whenever the cell does)."""

    id: str
    answer: Any

    @property
    def mark(self) -> str:
        if not self.answer:
            return "-"
        checked = {True: "p", False: "f"}.get(self.answer.passed, "")  # its checks landing changes the cell too
        if not checked and any(r.get("pending") for r in self.answer.checks):
            checked = "w"  # checked, waiting for a rubric grade: its grade landing changes it again
        return f"{self.answer.generation.status[:1]}{self.answer.attempts}{checked}"


def grid(run: SuiteRun) -> list[dict]:
    """One row per prompt, in order: the prompt and a Cell per contestant."""
    answers = {(a.prompt_id, a.contestant_id): a for a in _answers(run)}
    contestants = run.contestants
    return [{"prompt": prompt, "cells": [Cell(f"suite-answer-{prompt.id}-{m.id}", answers.get((prompt.id, m.id)))
                                         for m in contestants]}
            for prompt in run.prompts()]


def seen(cells: list[Cell], judged: list) -> str:
    """What a page shows, for its next poll: every cell's mark, a run of equal marks written once
    with its length ("d1*40.r1*2.-*200": a run fills its grid in order, so a 500-prompt suite's URL
    stays short), then how many judged pairs."""
    runs = [(mark, len(list(group))) for mark, group in groupby(cell.mark for cell in cells)]
    return ".".join(mark if n == 1 else f"{mark}*{n}" for mark, n in runs) + f"~{len(judged)}"


def _marks(shown: str) -> list[str]:
    """The cell marks `seen` wrote ([] if it is not one)."""
    marks = []
    for part in shown.split(".") if shown else ():
        mark, _, n = part.partition("*")
        if n and not (n.isdigit() and int(n) <= MAX_CELLS):
            return []
        marks += [mark] * (int(n) if n else 1)
        if len(marks) > MAX_CELLS:
            return []
    return marks


def _readings(judged: list, default: str) -> list[reliability.Reading]:
    return [reading for battle in judged
            for reading in reliability.readings_of(battle.left_id, battle.right_id, battle.judgements, default)]


def judge_agreement(judged: list, reliability_rows: dict | None = None) -> dict | None:
    """How often the judges said the same in both orders, from the same counts as the reliability
    table (`judge_reliability`, given or computed from `judged`): pairs read both ways whose two
    readings agree, summed over the run's judges (None: no pair read in both orders yet)."""
    if reliability_rows is None:
        default = judged[0].judge.slug if judged and judged[0].judge_id else ""
        reliability_rows = judges.rows(reliability.reliability(_readings(judged, default), between=False), {})
    judges_rows = reliability_rows["judges"]
    total = sum(j["pairs"] for j in judges_rows)
    if not total:
        return None
    agreed = sum(j["agreed"] for j in judges_rows)
    return {"agreed": agreed, "total": total, "percent": round(100 * agreed / total)}


def judge_reliability(run: SuiteRun, judged: list) -> dict:
    """Each of the run's judges' reliability over this run's readings, in words (the leaderboard's
    panel, arena.leaderboard.reliability), with people's revealed verdicts on its pairs."""
    readings = _readings(judged, run.judge.slug if run.judge else "")
    answers = SuiteAnswer.objects.filter(run=run).values("generation_id")
    people = (Battle.objects.filter(mode=Battle.Mode.SUITE, judge__isnull=True, revealed=True, left_id__in=answers)
              .exclude(outcome="").order_by("voted_at", "created_at", "id")
              .values_list("left_id", "right_id", "outcome"))
    return judges.rows(reliability.reliability(readings, people), names())


def failures(run: SuiteRun) -> list[dict]:
    """Per contestant with any: the prompts whose latest answer failed, and why."""
    failed = _answers(run).filter(generation__status=Generation.Status.FAILED).order_by("prompt__position")
    by_model: dict[int, dict] = {}
    for answer in failed:
        row = by_model.setdefault(answer.contestant_id, {"model": answer.generation.model, "answers": []})
        row["answers"].append(answer)
    return [by_model[m.id] for m in run.contestants if m.id in by_model]


@dataclass(frozen=True)
class Rate:
    """`count` passing of `total` checked, with its 95% Wilson interval (arena.leaderboard.reliability)."""

    count: int
    total: int

    @property
    def share(self) -> reliability.Share:
        return reliability.Share(self.count, self.total)

    def as_json(self) -> dict:
        share = self.share
        return {"passed": self.count, "total": self.total, "rate": share.value, "low": share.low, "high": share.high}


def usage(gen) -> pricing.Usage:
    """What a generation used, as it measured it (a cached answer's figures are its original's)."""
    return pricing.Usage(gen.prompt_tokens, gen.generated_tokens, gen.time_to_first_token_s, gen.tokens_per_s)


def answer_cost(gen, entry) -> float | None:
    """What a done answer cost at its entry's price, in dollars (None: no price, or not measured)."""
    if gen.status != Generation.Status.DONE:
        return None
    return pricing.cost(entry.price, usage(gen))


@dataclass
class Cost:
    """A contestant's answers' cost at its price: over its done answers whose cost could be
    measured (`priced`, summing to `total`), and over those of them that were checked (`checked`
    summing to `checked_total`, `passing` of them passed). Per passing answer: everything its
    checked answers cost, divided by the ones that passed (what one passing answer costs)."""

    price: pricing.Price | None
    priced: int = 0
    total: float = 0.0
    unmeasured: int = 0  # done answers with no cost: a figure the price needs was not measured
    checked: int = 0
    checked_total: float = 0.0
    passing: int = 0

    def add(self, cost: float | None, passed: bool | None) -> None:
        if cost is None:
            self.unmeasured += self.price is not None
            return
        self.priced, self.total = self.priced + 1, self.total + cost
        if passed is not None:
            self.checked, self.checked_total, self.passing = (self.checked + 1, self.checked_total + cost,
                                                              self.passing + passed)

    @property
    def per_answer(self) -> float | None:
        return self.total / self.priced if self.priced else None

    @property
    def per_passing(self) -> float | None:
        return self.checked_total / self.passing if self.passing else None

    def as_json(self) -> dict:
        return {"price": self.price.describe() if self.price else None, "currency": "USD",
                "per_answer": self.per_answer, "per_passing_answer": self.per_passing,
                "answers_priced": self.priced, "answers_unmeasured": self.unmeasured,
                "checked_priced": self.checked, "passing_priced": self.passing}


def check_rates(run: SuiteRun) -> dict | None:
    """The pass rates of the run's checked answers: per contestant (every check of an answer
    passed; with the answers' mean weighted score and what its answers cost at its price), per
    check name per contestant, in the order the checks first appear, and per prompt tag per
    contestant (tags in alphabetical order; an answer counts under each of its prompt's tags).
    None while no answer has a check. Two queries, whatever the run's size."""
    rows = SuiteAnswer.objects.filter(run=run, generation__status=Generation.Status.DONE).order_by(
        "prompt__position", "contestant_id").values_list(
        "contestant_id", "passed", "score", "checks", "prompt__tags", "generation__prompt_tokens",
        "generation__generated_tokens", "generation__time_to_first_token_s", "generation__tokens_per_s", "checked_at")
    contestants = run.contestants
    answers: dict[int, list] = {m.id: [0, 0, 0.0] for m in contestants}  # passed, total, summed score
    costs = {m.id: Cost(m.price) for m in contestants}
    by_check: dict[str, dict[int, list]] = {}
    by_tag: dict[str, dict[int, list]] = {}
    checked, last, pending = False, None, 0
    for contestant, passed, score, results, tags, prompt_tokens, generated, ttft, rate, checked_at in rows:
        price = costs[contestant].price
        used = pricing.Usage(prompt_tokens, generated, ttft, rate)
        costs[contestant].add(pricing.cost(price, used) if price else None, passed)
        last = checked_at if checked_at and (last is None or checked_at > last) else last
        pending += checked_at is None
        if passed is None:
            continue
        checked = True
        tally = answers[contestant]
        tally[0], tally[1], tally[2] = tally[0] + passed, tally[1] + 1, tally[2] + (score or 0.0)
        for result in results:
            cell = by_check.setdefault(result["name"], {m.id: [0, 0] for m in contestants})[contestant]
            cell[0], cell[1] = cell[0] + result["passed"], cell[1] + 1
        for tag in dict.fromkeys(tags or ()):
            cell = by_tag.setdefault(tag, {m.id: [0, 0] for m in contestants})[contestant]
            cell[0], cell[1] = cell[0] + passed, cell[1] + 1
    if not checked:
        return None
    return {"contestants": [{"model": m, "rate": Rate(*answers[m.id][:2]),
                             "score": answers[m.id][2] / answers[m.id][1] if answers[m.id][1] else None,
                             "cost": costs[m.id]}
                            for m in contestants],
            "checks": [{"name": name, "rates": [Rate(*cells[m.id]) for m in contestants]}
                       for name, cells in by_check.items()],
            "tags": [{"name": tag, "rates": [Rate(*by_tag[tag][m.id]) for m in contestants]}
                     for tag in sorted(by_tag)],
            "priced": any(cost.price for cost in costs.values()), "checked_at": last, "pending": pending}


def _per_contestant(rates: dict, rows: list) -> list[dict]:
    return [{"name": row["name"], "contestants": [
        {"model": m["model"].slug, **rate.as_json()} for m, rate in zip(rates["contestants"], row["rates"],
                                                                         strict=True)]}
            for row in rows]


def check_rates_json(rates: dict | None) -> dict | None:
    if rates is None:
        return None
    return {"contestants": [{"model": row["model"].slug, **row["rate"].as_json(), "mean_score": row["score"],
                             "cost": row["cost"].as_json()}
                            for row in rates["contestants"]],
            "checks": _per_contestant(rates, rates["checks"]),
            "tags": _per_contestant(rates, rates["tags"]),
            "checked_at": rates["checked_at"].isoformat() if rates["checked_at"] else None,
            "pending": rates["pending"]}


def judged_pairs(run: SuiteRun):
    """The model judge's verdicts, oldest first, with both answers' models."""
    return run.verdicts().select_related("left__model", "right__model", "judge").order_by("created_at", "id")


def verdicts_of(run: SuiteRun, user):
    """Whose people's verdicts the run's charts, decision and API read for `user`: their own, or
    for a teammate (who cannot judge it) its owner's; only revealed ones count (`rated_verdicts`),
    so nobody sees names before the owner's reveal."""
    return user if may_change(user, run) else run.owner


def rated_verdicts(run: SuiteRun, user):
    """The verdicts a run is rated by: the judge's, or, for a run that people judge, `user`'s
    revealed ones (never both: the two are not mixed silently)."""
    return run.verdicts() if run.judge_id else run.people_verdicts(user).filter(revealed=True)


def verdict_triples(run: SuiteRun, user) -> list[tuple[str, str, float]]:
    """(left slug, right slug, score of left) of the run's rated verdicts."""
    rows = rated_verdicts(run, user).values_list("left__model__slug", "right__model__slug", "outcome")
    return [(left, right, SCORES[outcome]) for left, right, outcome in rows]


def charts(run: SuiteRun, user, unreliable: bool = False, reliability_rows: dict | None = None) -> list[dict]:
    """Rating (from this run's verdicts) against decode speed and memory, speeds measured over
    the run's own answers (empty until there is a verdict). A run judged by a judge its readings
    here mark unreliable has none unless `unreliable` (asked for: the page labels them): every
    verdict of the run counted that judge's readings."""
    triples = verdict_triples(run, user)
    if not triples or (run.judge_id and not unreliable and unreliable_judges(run, reliability_rows)):
        return []
    contestants = run.contestants
    fitted = ratings.fit([m.slug for m in contestants], triples)
    return frontier.charts(measures.points(user, fitted, names(), generations=run_answers(run)))


def run_answers(run: SuiteRun):
    """The run's answers' generations: the speeds its charts and its decision summary read."""
    return Generation.objects.filter(id__in=SuiteAnswer.objects.filter(run=run).values("generation_id"))


def decision_summary(run: SuiteRun, user, unreliable: bool = False,
                     reliability_rows: dict | None = None) -> decision.Summary | None:
    """What to pick, from this run's rated verdicts (arena.leaderboard.picks): None while the run is
    live or before it has a verdict. Like the charts, a run whose every verdict counted a judge its
    readings mark unreliable names no entry unless asked (`unreliable`), and then says so."""
    if run.live:
        return None
    triples = verdict_triples(run, user)
    if not triples:
        return None
    marked = [j["label"] for j in unreliable_judges(run, reliability_rows)] if run.judge_id else []
    if marked and not unreliable:
        return picks.left_out(UNRELIABLE_LEFT_OUT.format(
            names=decision.names(marked), verb="is" if len(marked) == 1 else "are",
            pronoun="its" if len(marked) == 1 else "their"))
    return picks.summary(user, triples, run_answers(run), unreliable_judges=tuple(marked))


def unreliable_judges(run: SuiteRun, reliability_rows: dict | None = None) -> list[dict]:
    """The run's judges its readings mark unreliable (rows of `judge_reliability`)."""
    rows = reliability_rows if reliability_rows is not None else judge_reliability(run, list(judged_pairs(run)))
    return [j for j in rows["judges"] if j["unreliable"]]


def page(run: SuiteRun) -> dict:
    """What the run's page and its read-only shared page both show."""
    rows, judged = grid(run), list(judged_pairs(run))
    cells = [cell for row in rows for cell in row["cells"]]
    reliability_rows = judge_reliability(run, judged)
    return {"run": run, "results": run.results(), "contestants": run.contestants, "grid": rows,
            "failures": failures(run), "judged": judged, "check_rates": check_rates(run),
            "rubric": rubric.state(run),
            "agreement": judge_agreement(judged, reliability_rows),
            "reliability": reliability_rows, "judges": run.judges, "seen": seen(cells, judged),
            "unreliable_judges": [j for j in reliability_rows["judges"] if j["unreliable"]]}


def with_charts(run: SuiteRun, user, unreliable: bool = False) -> dict:
    """The page with its charts: those of an unreliable judge's verdicts only if asked (`unreliable`)."""
    context = page(run)
    return {**context, "charts": charts(run, user, unreliable, context["reliability"]),
            "decision": decision_summary(run, user, unreliable, context["reliability"]),
            "decision_scope": DECISION_SCOPE,
            "show_unreliable": unreliable}


def update(run: SuiteRun, shown: str, user, unreliable: bool = False) -> dict:
    """The reply to a poll from a page that shows `shown` (its `seen`): the progress, with
    `changed` (the cells whose answer changed since) and `new_judged` (the judged pairs it lacks;
    None: it must be given all of them); once the run has ended, `ended` and the whole page."""
    context = with_charts(run, user, unreliable) if not run.live else page(run)
    if not run.live:
        return {**context, "ended": True}
    marks, _, judged_count = shown.partition("~")
    cells = [cell for row in context["grid"] for cell in row["cells"]]
    old = _marks(marks)
    if len(old) == len(cells):
        changed = [cell for cell, mark in zip(cells, old, strict=True) if cell.mark != mark]
    else:  # another grid (or no `seen`): every cell
        changed = cells
    judged = context["judged"]
    count = int(judged_count) if judged_count.isdigit() else -1
    return {**context, "changed": changed, "new_judged": judged[count:] if 0 <= count <= len(judged) else None}
