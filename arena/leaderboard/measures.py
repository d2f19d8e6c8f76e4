"""What the quality-against-speed charts read besides ratings: each catalogue entry's measured
decode speed and its memory.

Speed: the median of Generation.tokens_per_s (the decode rate after the first token, as the
worker measured it: never the model's load, the wait in line or the time to first token, which
are recorded apart, so a cold start does not make an entry look slow) over the entry's
finished generations that may be named (an unrevealed blind battle's answers are left out), and
of those, the ones that ran alone on their worker where there are any (a suite run's answers
share a worker: 20 tok/s against 54–83 alone); else the point is marked mixed. A cached answer
(arena/generations/cache.py) carries its original's figures: each measurement counts once, by
the original's id, whether the set holds the original, its copies or both (`_once`).
Memory: the resident memory a running worker of the entry reports (the orchestrator's status
snapshot, as the status page shows it, without the viewer's secret models) where one is running,
else the catalogue's estimate; an endpoint holds no memory on our machines and has none.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from statistics import median

from django.db.models import QuerySet

from arena.catalogue.models import ModelEntry
from arena.generations import runs
from arena.generations.models import Generation

from .charts import Name
from .frontier import Point


def _answers(generations: QuerySet | None) -> QuerySet:
    """`generations` (default: every visible one) less a model judge's replies: those are the
    judging's, not the model's results (arena.generations.runs.judging_kinds)."""
    qs = Generation.objects.visible() if generations is None else generations
    return qs.exclude(run_kind__in=runs.judging_kinds())


def _once(rows: Iterable[tuple]) -> Iterator[tuple]:
    """Rows of (id, cached_from_id, *figures), less every row whose measurement was already given: a
    cached answer's figures are its original's (cached_from_id), never counted twice."""
    seen = set()
    for gen_id, cached_from_id, *figures in rows:
        measurement = cached_from_id or gen_id
        if measurement not in seen:
            seen.add(measurement)
            yield tuple(figures)


def median_speeds(generations: QuerySet | None = None) -> dict[str, float]:
    """Entry slug -> median decode tokens/s over `generations` (default: every visible one) that finished
    (those that ran alone on their worker where the entry has any: `speeds`)."""
    return {slug: rate for slug, (rate, _mixed) in speeds(generations).items()}


def speeds(generations: QuerySet | None = None) -> dict[str, tuple[float, bool]]:
    """Entry slug -> (median decode tokens/s, mixed?) over `generations` (default: every visible one)
    that finished. A rate measured while other answers shared the worker (metrics.shared_with_max > 0)
    is not the model's speed alone: the median is over the answers that ran alone where the entry has
    any; otherwise over all of them, and `mixed` says some were measured while others shared the worker."""
    alone: dict[str, list[float]] = {}
    every: dict[str, list[float]] = {}
    shared: set[str] = set()
    rows = _answers(generations).filter(status=Generation.Status.DONE, tokens_per_s__gt=0).values_list(
        "id", "cached_from_id", "model__slug", "tokens_per_s", "metrics__shared_with_max")
    for slug, rate, others in _once(rows):
        every.setdefault(slug, []).append(rate)
        if others == 0:
            alone.setdefault(slug, []).append(rate)
        elif others:
            shared.add(slug)
    return {slug: (median(alone[slug]), False) if slug in alone else (median(rates), slug in shared)
            for slug, rates in every.items()}


def median_first_tokens(generations: QuerySet | None = None) -> dict[str, float]:
    """Entry slug -> median time to first token in seconds over `generations` (default: every
    visible one) that finished."""
    qs = _answers(generations)
    times: dict[str, list[float]] = {}
    rows = qs.filter(status=Generation.Status.DONE, time_to_first_token_s__isnull=False).values_list(
        "id", "cached_from_id", "model__slug", "time_to_first_token_s")
    for slug, seconds in _once(rows):
        times.setdefault(slug, []).append(seconds)
    return {slug: median(values) for slug, values in times.items()}


def memory_figures(user, slugs: list[str]) -> dict[str, tuple[float, bool]]:
    """Entry slug -> (memory in MB, measured?) for the `slugs` that hold memory here."""
    from arena.workers import status  # the status page's reader: it already hides secret models

    measured: dict[str, float] = {}
    for worker in status.for_viewer(user)["workers"]:
        if worker.get("measured_mb"):
            measured[worker["slug"]] = max(measured.get(worker["slug"], 0.0), float(worker["measured_mb"]))
    figures = {}
    for entry in ModelEntry.objects.filter(slug__in=slugs):
        if entry.slug in measured:
            figures[entry.slug] = (measured[entry.slug], True)
        elif not entry.is_endpoint and entry.memory_estimate_mb:
            figures[entry.slug] = (float(entry.memory_estimate_mb), False)
    return figures


def points(user, ratings: dict[str, float], labels: dict[str, Name],
           generations: QuerySet | None = None) -> list[Point]:
    """One point per rated entry (slug -> rating), named by `labels` (records.names()), for
    frontier.charts; speeds measured over `generations` (a suite run's answers, say), else over
    every visible one."""
    measured, memory = speeds(generations), memory_figures(user, list(ratings))
    first_tokens = median_first_tokens(generations)
    named = {slug: labels.get(slug) or Name(slug, slug) for slug in ratings}
    held = {slug: memory.get(slug, (None, False)) for slug in ratings}
    return [Point(named[slug].label, rating, measured[slug][0] if slug in measured else None, held[slug][0],
                  held[slug][1], named[slug].full, slug, first_tokens.get(slug),
                  speed_mixed=slug in measured and measured[slug][1])
            for slug, rating in ratings.items()]
