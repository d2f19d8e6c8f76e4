"""The battle records the leaderboard is fitted on, read from the battles app."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import F, Q
from django.utils import timezone

from arena.battles.models import Battle

from .charts import Name, distinct

SCORES = {Battle.Outcome.LEFT: 1.0, Battle.Outcome.RIGHT: 0.0, Battle.Outcome.TIE: 0.5, Battle.Outcome.BOTH_BAD: 0.5}
MODES = {"all": "All verdicts", "anonymous": "Anonymous battles", "named": "Named comparisons",
         "blind": "Blind (tournament matches)"}
PERIODS = {"all": None, "1": 1, "7": 7, "30": 30}
# Whose verdicts: people's by default, so a model judge's are never mixed in unasked.
SOURCES = {"human": "People's verdicts", "judge": "Model judges' verdicts", "both": "People's and judges' verdicts"}
# A blind verdict where an answer named a contestant ("I am Gemma"): the judge may not have been
# blind. A named comparison showed the names anyway, so its flag changes nothing.
FLAGGED = Q(blind=True, self_identified=True)


def counted_battles():
    """The battles whose verdict counts. A blind battle counts once its tournament has revealed
    it: before, its effect on the table would tell its judge which model they picked."""
    return Battle.objects.exclude(outcome="").exclude(blind=True, revealed=False)


def default_mode() -> str:
    """The view the leaderboard opens on: anonymous battles once people have given any (the app
    drew those pairs, so they sample the catalogue most fairly), else every verdict."""
    counted = counted_battles().filter(mode=Battle.Mode.ANONYMOUS, judge__isnull=True)
    return "anonymous" if counted.exists() else "all"


def tags() -> list[str]:
    """The prompt tags of counted battles, for the filter."""
    return sorted(counted_battles().exclude(tag="").order_by().values_list("tag", flat=True).distinct())


def verdicts(mode: str = "all", days: int | None = None, tag: str = "", source: str = "human"):
    """The counted battles of one filter: a mode, the last `days` days, a prompt tag, whose
    verdicts (people's, model judges', both)."""
    # A model against itself (two system prompts) says nothing of its rating.
    battles = counted_battles().exclude(left__model_id=F("right__model_id"))
    if source == "human":
        battles = battles.filter(judge__isnull=True)
    elif source == "judge":
        battles = battles.filter(judge__isnull=False)
    if mode == "named":
        battles = battles.filter(blind=False)
    elif mode == "blind":  # tournament matches (and suite runs' blind pairs): not the anonymous battles
        battles = battles.filter(blind=True).exclude(mode=Battle.Mode.ANONYMOUS)
    elif mode == "anonymous":
        battles = battles.filter(mode=Battle.Mode.ANONYMOUS)
    if tag:
        battles = battles.filter(tag=tag)
    if days:
        battles = battles.filter(voted_at__gte=timezone.now() - timedelta(days=days))
    return battles


def battle_records(mode: str = "all", days: int | None = None, tag: str = "", flagged: bool = False,
                   source: str = "human"):
    """Every verdict (ties and "both bad" count as ties), as (left slug, right slug, score of left,
    from a tournament), optionally only those of one prompt tag; flagged blind verdicts only if asked."""
    rows = _counted(mode, days, tag, flagged, source).values_list(
        "left__model__slug", "right__model__slug", "outcome", "mode")
    return [(left, right, SCORES[outcome], mode == Battle.Mode.TOURNAMENT) for left, right, outcome, mode in rows]


def style_records(mode: str = "all", days: int | None = None, tag: str = "", flagged: bool = False,
                  source: str = "human"):
    """The same verdicts as battle_records, as (left slug, right slug, score of left, left answer,
    right answer), each answer (text, generated tokens): what style control reads."""
    rows = _counted(mode, days, tag, flagged, source).values_list(
        "left__model__slug", "right__model__slug", "outcome", "left__text", "left__generated_tokens",
        "right__text", "right__generated_tokens")
    return [(left, right, SCORES[outcome], (lt, ln or 0), (rt, rn or 0))
            for left, right, outcome, lt, ln, rt, rn in rows]


def _counted(mode, days, tag, flagged, source):
    battles = verdicts(mode, days, tag, source)
    return battles if flagged else battles.exclude(FLAGGED)


def flagged_count(mode: str = "all", days: int | None = None, tag: str = "", source: str = "human") -> int:
    """How many verdicts of the filter are flagged: left out by default, shown on request."""
    return verdicts(mode, days, tag, source).filter(FLAGGED).count()


def agreement_records(mode: str = "all", days: int | None = None, tag: str = "", flagged: bool = False):
    """People's and judges' verdicts of the filter, oldest first, as (left generation, right
    generation, outcome, judged): what the judge-human agreement compares."""
    rows = (_counted(mode, days, tag, flagged, "both").order_by("voted_at", "created_at")
            .values_list("left_id", "right_id", "outcome", "judge_id"))
    return [(left, right, outcome, judge is not None) for left, right, outcome, judge in rows]


def names() -> dict[str, Name]:
    """Entry slug -> its Name: the label charts and tables show (ModelEntry.label; the name where an
    entry has none yet), no two alike, and the full catalogue name. Verdicts are kept by slug, so
    an entry's renamed or relabelled verdicts show its current label."""
    from arena.catalogue.models import ModelEntry

    rows = list(ModelEntry.objects.order_by("created_at", "pk").values_list("slug", "label", "name"))
    shown = distinct([Name(label or name, name) for _slug, label, name in rows], [slug for slug, *_x in rows])
    return {slug: name for (slug, *_x), name in zip(rows, shown, strict=True)}



