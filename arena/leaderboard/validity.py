"""Structured output on the leaderboard: per model, how often its finished answers followed
the JSON schema or regex they were asked for (Generation.output_valid). A model judge's replies
are constrained too (arena.suite_runs.judge.VERDICT_SCHEMA), but they are the judging's, not
the model's results: they are left out (`runs.judging_kinds`)."""

from django.db.models import Count, Q

from arena.generations import runs
from arena.generations.models import Generation


def rates(labels: dict | None = None) -> list[dict]:
    """Each model with constrained answers: valid, total and the rate, best first, with its Name
    from `labels` (slug -> charts.Name) where given. Unrevealed blind answers are left out, as
    everywhere (a tally per model would name them)."""
    rows = (Generation.objects.visible()
            .filter(status=Generation.Status.DONE, output_valid__isnull=False)
            .exclude(run_kind__in=runs.judging_kinds())
            .values("model__slug", "model__name")
            .annotate(total=Count("id"), valid=Count("id", filter=Q(output_valid=True))))
    labels = labels or {}
    table = [{"model": r["model__slug"], "name": r["model__name"], "valid": r["valid"], "total": r["total"],
              "label": labels[r["model__slug"]].label if r["model__slug"] in labels else r["model__name"],
              "rate": r["valid"] / r["total"]} for r in rows]
    return sorted(table, key=lambda r: (-r["rate"], -r["total"], r["name"]))
