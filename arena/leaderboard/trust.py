"""Which model judges' verdicts count unasked: a judge its stored readings mark unreliable
(arena.leaderboard.reliability's rule: it reads positions, disagrees with itself, or says
ties) has its verdicts left out of the leaderboard, and shown only on request, labelled.

The rule reads every judged battle's readings (each judge of a jury apart), the same readings
the reliability panel shows, so the judges left out are the ones the panel marks unreliable.
A jury's verdict with an unreliable judge among its seats is left out whole: the jury's
majority counted that judge's reading-by-position as a vote."""

from __future__ import annotations

from django.db.models import QuerySet

from arena.battles.judging import by_judge
from arena.battles.models import Battle

from . import reliability


def _judged_rows():
    return (Battle.objects.filter(judge__isnull=False).exclude(outcome="").order_by("voted_at", "created_at", "id")
            .values_list("id", "left_id", "right_id", "judge__slug", "judgements"))


def stored_readings() -> list[reliability.Reading]:
    """Every judged battle's readings, oldest first, one Reading per judge and pair."""
    return [reading for _id, left, right, judge, judgements in _judged_rows()
            for reading in reliability.readings_of(left, right, judgements, judge)]


def unreliable_judges() -> set[str]:
    """The catalogue slugs of the judges their stored readings mark unreliable."""
    return reliability.unreliable(stored_readings())


def unreliable_battles(judges: set[str]) -> list:
    """The ids of the judged battles one of `judges` read."""
    return [battle_id for battle_id, _l, _r, judge, judgements in _judged_rows()
            if judge in judges or set(by_judge(judgements, judge)) & judges]


def leave_out_unreliable(battles: QuerySet) -> QuerySet:
    """`battles` without the verdicts an unreliable judge took part in (records.verdicts calls
    this unless the viewer asked to see them)."""
    judges = unreliable_judges()
    return battles.exclude(id__in=unreliable_battles(judges)) if judges else battles
