"""What to pick from a set of verdicts of its own: a suite run's or a tournament's.

The leaderboard's decision summary (arena.leaderboard.decision) computed from the verdicts a
view holds (a run's judged pairs, a bracket's matches) instead of the leaderboard's filter: their
ratings with 95% intervals and rank ranges, their head-to-head cells, and each entry's decode
speed measured over the view's own answers (measures.points: alone where any ran alone, else
marked as measured beside other answers) and memory as the charts give it."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.db.models import QuerySet

from . import decision, measures, ratings, records, uncertainty


def summary(user, triples: Sequence[tuple[str, str, float]], generations: QuerySet | None = None, *,
            unreliable_judges: tuple[str, ...] = (), tournament_verdicts: int = 0) -> decision.Summary:
    """The decision summary of `triples` ((a slug, b slug, score of a)), speeds over `generations`."""
    triples = list(triples)
    rows = ratings.leaderboard(triples)
    labels = records.names()
    points = {p.slug: p for p in measures.points(user, {r.model: r.rating for r in rows}, labels, generations)}
    threshold = settings.ARENA_LEADERBOARD_PROVISIONAL_VERDICTS
    entries = []
    for r in rows:
        p = points.get(r.model)
        entries.append(decision.Entry(
            r.model, (labels.get(r.model) or records.Name(r.model, r.model)).label, r.rating, r.lower, r.upper,
            r.rank_best or r.rank, r.rank_worst or r.rank, r.battles, uncertainty.provisional(r.battles, threshold),
            p.tokens_per_s if p else None, bool(p and p.speed_mixed), p.memory_mb if p else None,
            bool(p and p.memory_measured)))
    return decision.summarise(entries, ratings.win_matrix(triples), decision.Context(
        verdicts=len(triples), tournament_verdicts=tournament_verdicts, unreliable_judges=unreliable_judges,
        provisional_threshold=threshold))


def left_out(sentence: str) -> decision.Summary:
    """A summary that names no entry, only why: `sentence` (e.g. its verdicts are left out)."""
    return decision.Summary((), None, None, None, None, False, None, None, (sentence,), (sentence,))
