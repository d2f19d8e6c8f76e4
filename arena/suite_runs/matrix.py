"""A suite run's pass matrix: its prompts (rows) by its contestants (columns), each cell what the
contestant's answer to the prompt came to: passed its checks (with its score when that is below
1), failed them (the failing checks named), not checked yet, no checks (the prompt has none),
failed to generate, or not answered yet. Each cell links to its answer (the generation's page).

Filters: a tag (the prompts carrying it) and failing only (the prompts where some answer failed its
checks or failed to generate; the whole row is shown, so the other answers compare). A page holds
PAGE_PROMPTS prompts: a 500-prompt x 16-contestant run is 8,000 answers, more than a page can show
at once and render fast (bench/pass_matrix.py measures it).

The cells are shaped by the pure functions at the top (`cell`, `select`), from plain facts; the
bottom reads the database: the run's contestants, its prompts (their text cut short in the query),
the prompts with a failing answer (one query) and the page's answers (one query, whatever the
page's size). Contestants are named as the run page names them (their labels)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import Q
from django.db.models.functions import Substr
from django.urls import reverse

from arena.generations.models import Generation

from .models import SuiteAnswer, SuiteRun

PAGE_PROMPTS = 50
PROMPT_CHARS = 100  # of each prompt's text in its row, cut in the query (a prompt may be long)
FAILING_SHOWN = 3  # failing checks named in a cell; the others counted ("and 2 more"), all in its title
MAX_TAG = 100  # a tag asked for longer than any stored one matches nothing anyway

# A cell's state: its CSS class and data-state, and what it says.
PASS, FAIL, NOT_CHECKED, NO_CHECKS, FAILED, CANCELLED, GENERATING, NOT_STARTED = (
    "pass", "fail", "not-checked", "no-checks", "failed", "cancelled", "generating", "not-started")
WORDS = {PASS: "pass", FAIL: "fail", NOT_CHECKED: "not checked", NO_CHECKS: "no checks",
         FAILED: "failed to generate", CANCELLED: "cancelled", GENERATING: "generating", NOT_STARTED: "not started"}
FAILING = (FAIL, FAILED)  # what "failing only" keeps


@dataclass(frozen=True)
class Facts:
    """What the matrix reads of one answer (SuiteAnswer and its generation)."""

    prompt_id: int
    contestant_id: int
    status: str  # the generation's
    passed: bool | None
    score: float | None
    checks: Sequence[dict]
    checked: bool  # checked_at is set (a done answer with no check is checked too: "no checks")
    generation_id: uuid.UUID | None = None
    attempts: int = 1
    cached: bool = False
    failure_reason: str = ""


@dataclass(frozen=True)
class Cell:
    state: str
    score: float | None  # shown when below 1
    failing: tuple[dict, ...]  # the failing checks' results (name, expected, got, error)
    generation_id: uuid.UUID | None
    attempts: int = 1
    cached: bool = False
    reason: str = ""  # why it failed to generate

    @property
    def words(self) -> str:
        return WORDS[self.state]

    @property
    def named(self) -> list[str]:
        """The failing checks named in the cell (the first FAILING_SHOWN)."""
        return [r["name"] for r in self.failing[:FAILING_SHOWN]]

    @property
    def more(self) -> int:
        """Failing checks not named in the cell."""
        return max(0, len(self.failing) - FAILING_SHOWN)

    @property
    def details(self) -> list[str]:
        """Every failing check with what it expected and what it got."""
        return [f"{r['name']}: expected {r.get('expected', '')}; got {r.get('error') or r.get('got', '')}"
                for r in self.failing]

    @property
    def title(self) -> str:
        """The cell's tooltip: its state, then every failing check (or why it failed to generate)."""
        head = f"{self.words.capitalize()}: {self.reason}" if self.reason else self.words.capitalize()
        return "\n".join([head, *self.details])


def state(facts: Facts | None) -> str:
    if facts is None:
        return NOT_STARTED
    if facts.status == Generation.Status.DONE:
        if facts.passed is None:
            return NO_CHECKS if facts.checked else NOT_CHECKED
        return PASS if facts.passed else FAIL
    if facts.status == Generation.Status.FAILED:
        return FAILED
    if facts.status == Generation.Status.CANCELLED:
        return CANCELLED
    return GENERATING


def cell(facts: Facts | None) -> Cell:
    """One answer's cell (None: no answer started)."""
    found = state(facts)
    if facts is None:
        return Cell(found, None, (), None)
    failing = tuple(r for r in facts.checks if not r.get("passed")) if found == FAIL else ()
    score = facts.score if found in (PASS, FAIL) and facts.score is not None and facts.score < 1 else None
    reason = facts.failure_reason if found == FAILED else ""
    return Cell(found, score, failing, facts.generation_id, facts.attempts, facts.cached, reason)


def failing_prompts(facts: Iterable[Facts]) -> set[int]:
    """The prompts with an answer that failed its checks or failed to generate."""
    return {f.prompt_id for f in facts if state(f) in FAILING}


def select(prompts: Sequence[tuple[int, Sequence[str]]], tag: str = "", failing: set[int] | None = None) -> list[int]:
    """The ids of the prompts shown, in order: `prompts` is (id, tags) in the run's order; `tag`
    keeps those carrying it, `failing` (when given) those in it."""
    return [pid for pid, tags in prompts
            if (not tag or tag in (tags or ())) and (failing is None or pid in failing)]


def rows(prompt_ids: Sequence[int], contestant_ids: Sequence[int], facts: Iterable[Facts]) -> list[list[Cell]]:
    """The cells, a row per prompt of `prompt_ids`, a column per contestant."""
    by_key = {(f.prompt_id, f.contestant_id): f for f in facts}
    return [[cell(by_key.get((pid, cid))) for cid in contestant_ids] for pid in prompt_ids]


# --- reading the database ------------------------------------------------------------------
@dataclass(frozen=True)
class Query:
    """What the page asks for: ?tag=, ?failing=1, ?page= (anything unreadable reads as nothing)."""

    tag: str = ""
    failing: bool = False
    page: str = "1"

    @classmethod
    def of(cls, params) -> Query:
        tag = params.get("tag", "")
        return cls(tag=tag[:MAX_TAG + 1] if isinstance(tag, str) else "", failing=params.get("failing") == "1",
                   page=str(params.get("page", "1"))[:12])


def _facts(values) -> Facts:
    (prompt_id, contestant_id, status, passed, score, checks, checked_at, generation_id, attempts,
     cached_from, reason) = values
    return Facts(prompt_id, contestant_id, status, passed, score, checks or (), checked_at is not None,
                 generation_id, attempts, cached_from is not None, reason)


FACT_FIELDS = ("prompt_id", "contestant_id", "generation__status", "passed", "score", "checks", "checked_at",
               "generation_id", "attempts", "generation__cached_from_id", "generation__failure_reason")
# The query's side of `state(...) in FAILING`.
FAILING_ANSWER = Q(passed=False, generation__status=Generation.Status.DONE) | Q(
    generation__status=Generation.Status.FAILED)
ZERO = str(uuid.UUID(int=0))


def matrix(run: SuiteRun, query: Query) -> dict:
    """The matrix page's context: the contestants, the rows of the page asked for (each its prompt
    and cells), the pager, the tags to filter by, and how many prompts fail and are shown."""
    contestants = run.contestants
    prompts = list(run.prompts().annotate(short=Substr("prompt", 1, PROMPT_CHARS + 1)).values_list(
        "id", "position", "short", "tags"))
    failing = set(SuiteAnswer.objects.filter(run=run).filter(FAILING_ANSWER).values_list("prompt_id", flat=True))
    tags = sorted({tag for *_, prompt_tags in prompts for tag in prompt_tags or ()})
    tag = query.tag if query.tag in tags else ""
    shown = select([(pid, prompt_tags) for pid, _, _, prompt_tags in prompts], tag,
                   failing if query.failing else None)
    page: Page = Paginator(shown, PAGE_PROMPTS).get_page(query.page)
    ids = list(page.object_list)
    facts = [_facts(v) for v in SuiteAnswer.objects.filter(run=run, prompt_id__in=ids).values_list(*FACT_FIELDS)]
    by_id = {pid: (position, text) for pid, position, text, _ in prompts}
    answer_url = reverse("generation-detail", args=[ZERO])  # once: a reverse per cell is measurable
    cells = rows(ids, [m.id for m in contestants], facts)
    return {"run": run, "contestants": contestants, "tags": tags, "tag": tag, "failing_only": query.failing,
            "page": page, "prompts": len(prompts), "failing_prompts": len(failing),
            "shown": len(shown),
            "rows": [{"position": by_id[pid][0], "prompt": by_id[pid][1][:PROMPT_CHARS],
                      "cut": len(by_id[pid][1]) > PROMPT_CHARS,
                      "cells": [(c, answer_url.replace(ZERO, str(c.generation_id)) if c.generation_id else "")
                                for c in row]}
                     for pid, row in zip(ids, cells, strict=True)]}
