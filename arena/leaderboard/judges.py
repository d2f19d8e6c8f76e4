"""The leaderboard's judge reliability panel: every model judge's stored readings, read from the
battles app, and people's verdicts on the same pairs (arena.leaderboard.reliability computes)."""

from __future__ import annotations

from arena.battles.models import Battle

from . import reliability
from .records import counted_battles


def stored_readings() -> list[reliability.Reading]:
    """Every judged battle's readings, oldest first, one Reading per judge and pair."""
    rows = (Battle.objects.filter(judge__isnull=False).exclude(outcome="").order_by("voted_at", "created_at", "id")
            .values_list("left_id", "right_id", "judge__slug", "judgements"))
    return [reading for left, right, judge, judgements in rows
            for reading in reliability.readings_of(left, right, judgements, judge)]


def people_verdicts() -> list[tuple]:
    """People's counted verdicts (a blind one once revealed), oldest first, as (left, right, outcome)."""
    rows = counted_battles().filter(judge__isnull=True).order_by("voted_at", "created_at", "id")
    return list(rows.values_list("left_id", "right_id", "outcome"))


def panel() -> reliability.Report:
    """Each judge's figures over all its stored readings (seeded: the same verdicts, the same page)."""
    return reliability.reliability(stored_readings(), people_verdicts())


TOO_FEW = "too few pairs"


def _share(value: float | None) -> str:
    return TOO_FEW if value is None else f"{round(100 * value)}%"


def _kappa(kappa: reliability.Kappa, min_pairs: int) -> dict:
    """A kappa in words: its value and interval, or why there is none."""
    if kappa.pairs < min_pairs:
        text = f"{TOO_FEW} ({kappa.pairs} of {min_pairs})" if kappa.pairs else "no pair in common"
    elif kappa.value is None:
        text = "undefined (one answer every time)"
    else:
        text = f"{kappa.value:.2f}" + (f" (95%: {kappa.low:.2f} to {kappa.high:.2f})" if kappa.low is not None else "")
    return {"text": text, "value": kappa.value, "pairs": kappa.pairs}


def rows(report: reliability.Report, labels: dict) -> dict:
    """The panel's rows in words (`labels`: slug -> a name with a `label`), for
    templates/leaderboard/_reliability.html."""
    def label(slug: str) -> str:
        name = labels.get(slug)
        return name.label if name is not None else slug

    judges = [{"slug": f.judge, "label": label(f.judge), "pairs": f.pairs, "readings": f.readings,
               "enough": f.pairs >= report.min_pairs,
               "self_consistency": _share(f.self_consistency),
               "position_bias": ("no decisive reading" if f.position_bias is None and f.pairs >= report.min_pairs
                                 else _share(f.position_bias)),
               "tie_rate": _share(f.tie_rate), "people": _kappa(f.people, report.min_pairs),
               "figures": {"self_consistency": f.self_consistency, "position_bias": f.position_bias,
                           "tie_rate": f.tie_rate, "kappa_people": f.people.value,
                           "kappa_people_interval": ([f.people.low, f.people.high] if f.people.low is not None
                                                     else None),
                           "kappa_people_pairs": f.people.pairs}}
              for f in report.judges]
    between = [{"a": label(a), "b": label(b), "a_slug": a, "b_slug": b, "kappa": _kappa(k, report.min_pairs),
                "figures": {"kappa": k.value, "interval": [k.low, k.high] if k.low is not None else None,
                            "pairs": k.pairs}}
               for a, b, k in report.between]
    return {"judges": judges, "between": between, "min_pairs": report.min_pairs}
