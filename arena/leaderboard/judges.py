"""The leaderboard's judge reliability panel: every model judge's stored readings, read from the
battles app, and people's verdicts on the same pairs (arena.leaderboard.reliability computes)."""

from __future__ import annotations

from . import reliability
from .records import counted_battles
from .trust import stored_readings


def people_verdicts() -> list[tuple]:
    """People's counted verdicts (a blind one once revealed), oldest first, as (left, right, outcome)."""
    rows = counted_battles().filter(judge__isnull=True).order_by("voted_at", "created_at", "id")
    return list(rows.values_list("left_id", "right_id", "outcome"))


def panel() -> reliability.Report:
    """Each judge's figures over all its stored readings (seeded: the same verdicts, the same page)."""
    return reliability.reliability(stored_readings(), people_verdicts())


TOO_FEW = "too few pairs"
VERDICT_LABELS = {reliability.RELIABLE: "Reliable", reliability.UNRELIABLE: "Unreliable",
                  reliability.NOT_ENOUGH: "Not enough readings"}


def _percent(value: float) -> str:
    return f"{round(100 * value)}%"


def share_text(share: reliability.Share, none: str) -> str:
    """A share in words with its counts and 95% interval ("0 of 9 (0%; 95%: 0%–30%)"), or `none`
    when there is nothing to count: the same counts a page's headline reads."""
    if not share.total or share.value is None or share.low is None or share.high is None:
        return none
    return (f"{share.count} of {share.total} ({_percent(share.value)}; "
            f"95%: {_percent(share.low)}–{_percent(share.high)})")


def _share_json(share: reliability.Share) -> dict:
    return {"count": share.count, "total": share.total, "value": share.value,
            "interval": [share.low, share.high] if share.total else None}


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
               "enough": f.pairs >= report.min_pairs, "verdict": f.verdict, "verdict_label": VERDICT_LABELS[f.verdict],
               "unreliable": f.unreliable, "sentence": f.sentence,
               "agreed": f.consistent.count,
               "self_consistency": share_text(f.consistent, "no pair read both ways"),
               "position_bias": share_text(f.first, "no decisive reading"),
               "tie_rate": share_text(f.ties, "no reading"), "people": _kappa(f.people, report.min_pairs),
               "figures": {"self_consistency": f.self_consistency, "position_bias": f.position_bias,
                           "tie_rate": f.tie_rate, "kappa_people": f.people.value,
                           "kappa_people_interval": ([f.people.low, f.people.high] if f.people.low is not None
                                                     else None),
                           "kappa_people_pairs": f.people.pairs, "verdict": f.verdict, "sentence": f.sentence,
                           "consistent": _share_json(f.consistent), "first": _share_json(f.first),
                           "ties": _share_json(f.ties)}}
              for f in report.judges]
    between = [{"a": label(a), "b": label(b), "a_slug": a, "b_slug": b, "kappa": _kappa(k, report.min_pairs),
                "figures": {"kappa": k.value, "interval": [k.low, k.high] if k.low is not None else None,
                            "pairs": k.pairs}}
               for a, b, k in report.between]
    return {"judges": judges, "between": between, "min_pairs": report.min_pairs}
