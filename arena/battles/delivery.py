"""A blind battle's streams read into a `Pacer` (arena/battles/pacing.py) on Redis's clock.

Every event's time is its stream entry id (Redis's own clock in milliseconds, whoever wrote
it), and "now" is Redis's TIME, so every reader (each browser's socket, the API, the vote
check) computes the same paced view wherever it runs."""

from __future__ import annotations

from django.conf import settings

from arena import streams
from inference import protocol as p

from .pacing import Pacer, SideView

# The entries read from a stream's end to find its terminal event (the last one the worker
# writes; a few more in case anything follows it).
TAIL = 4


def entry_time(entry_id) -> float:
    """Seconds since the epoch of a stream entry id ("1732390000123-0"): Redis's clock when it was written."""
    return streams.entry_key(entry_id)[0] / 1000


def redis_time(reply) -> float:
    seconds, micros = reply
    return int(seconds) + int(micros) / 1e6


def new_pacer() -> Pacer:
    return Pacer(sides=2, words_per_s=settings.ARENA_BLIND_WORDS_PER_S)


def feed(pacer: Pacer, side: int, entries) -> None:
    for entry_id, fields in entries:
        pacer.add(side, entry_time(entry_id), p.parse_event(fields))


def stream_outcomes(battle) -> list[str | None]:
    """Each side's outcome as its stream tells it: the terminal event's type ("done", "failed",
    "cancelled"), or None while it is still coming (or its stream is gone). The worker writes
    the terminal event; the battle task stores the row a few milliseconds later, so a vote
    right after both streams ended reads them here rather than the rows (presenting.Shown)."""
    client, keys = streams.client(), streams.keys()
    pipe = client.pipeline()
    for _side, gen in battle.sides:
        pipe.xrevrange(keys.stream(str(gen.id)), count=TAIL)
    outcomes: list[str | None] = []
    for entries in pipe.execute():
        kinds = [p.parse_event(fields)["type"] for _id, fields in entries]
        outcomes.append(next((kind for kind in kinds if kind in p.TERMINAL_EVENTS), None))
    return outcomes


def paced_views(battle) -> list[SideView] | None:
    """What a blind battle's two sides show now, or None once its streams are gone and the
    database has both outcomes (long after every viewer saw them end)."""
    client, keys = streams.client(), streams.keys()
    names = [keys.stream(str(gen.id)) for _side, gen in battle.sides]
    pipe = client.pipeline()
    for name in names:
        pipe.xrange(name)
    pipe.time()
    *replies, now = pipe.execute()
    if not any(replies) and battle.finished:
        return None
    pacer = new_pacer()
    for side, entries in enumerate(replies):
        feed(pacer, side, entries)
    return pacer.view(redis_time(now))
