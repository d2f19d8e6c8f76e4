"""What a suite run's page shows besides its progress and results: the answers grid, each
contestant's failures, the judged pairs with both raw judgements, and the quality-against-speed
charts from the run's own answers (the leaderboard's chart code, arena.leaderboard)."""

from __future__ import annotations

from arena.generations.models import Generation
from arena.leaderboard import frontier, measures, ratings
from arena.leaderboard.records import SCORES

from .models import SuiteAnswer, SuiteRun


def _answers(run: SuiteRun):
    return SuiteAnswer.objects.filter(run=run).select_related("generation__model", "prompt")


def grid(run: SuiteRun) -> list[dict]:
    """One row per prompt, in order: the prompt and each contestant's answer (None: not started)."""
    cells = {(a.prompt_id, a.contestant_id): a for a in _answers(run)}
    contestants = run.contestants
    return [{"prompt": prompt, "answers": [cells.get((prompt.id, m.id)) for m in contestants]}
            for prompt in run.suite.ordered_prompts()]


def failures(run: SuiteRun) -> list[dict]:
    """Per contestant with any: the prompts whose latest answer failed, and why."""
    failed = _answers(run).filter(generation__status=Generation.Status.FAILED).order_by("prompt__position")
    by_model: dict[int, dict] = {}
    for answer in failed:
        row = by_model.setdefault(answer.contestant_id, {"model": answer.generation.model, "answers": []})
        row["answers"].append(answer)
    return [by_model[m.id] for m in run.contestants if m.id in by_model]


def judged_pairs(run: SuiteRun):
    """The model judge's verdicts, oldest first, with both answers' models."""
    return run.verdicts().select_related("left__model", "right__model").order_by("created_at")


def rated_verdicts(run: SuiteRun, user):
    """The verdicts a run is rated by: the judge's, or, for a run that people judge, `user`'s
    revealed ones (never both: the two are not mixed silently)."""
    return run.verdicts() if run.judge_id else run.people_verdicts(user).filter(revealed=True)


def verdict_triples(run: SuiteRun, user) -> list[tuple[str, str, float]]:
    """(left slug, right slug, score of left) of the run's rated verdicts."""
    rows = rated_verdicts(run, user).values_list("left__model__slug", "right__model__slug", "outcome")
    return [(left, right, SCORES[outcome]) for left, right, outcome in rows]


def charts(run: SuiteRun, user) -> list[dict]:
    """Rating (from this run's verdicts) against decode speed and memory, speeds measured over
    the run's own answers (empty until there is a verdict)."""
    triples = verdict_triples(run, user)
    if not triples:
        return []
    contestants = run.contestants
    fitted = ratings.fit([m.slug for m in contestants], triples)
    labels = {m.slug: m.name for m in contestants}
    answers = Generation.objects.filter(id__in=SuiteAnswer.objects.filter(run=run).values("generation_id"))
    return frontier.charts(measures.points(user, fitted, labels, generations=answers))


def page(run: SuiteRun) -> dict:
    """What the run's page and its read-only shared page both show."""
    return {"run": run, "results": run.results(), "contestants": run.contestants, "grid": grid(run),
            "failures": failures(run), "judged": judged_pairs(run)}
