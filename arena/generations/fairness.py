"""The fair line for capacity: which waiting runs start next. Pure: no Django, no Redis, no clock.

The installation runs at most `capacity` generations at once (ARENA_MAX_CONCURRENT_GENERATIONS).
Runs that do not fit wait in one line, served round robin between users, not first come: a
user who sends forty requests waits behind nobody, but everyone else's next request goes
before that user's second. The rotation is stateless: users are ordered by when they were
last served (never, or longest ago, first; ties by who has waited longest), and the line takes
each user's first waiting run in that order, then each one's second, and so on.

A run (a single generation, or a battle's two sides, which must start together) costs its
number of generations. The line is strict: when the next run does not fit, nothing behind it
starts, or a battle needing two slots would wait forever behind singles taking each one freed.
A run larger than the whole capacity still starts once nothing else runs.

`admission.py` reads the database into these shapes and applies the answer.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Waiting:
    """One run in line: `key` names it, `user` whose, `cost` its generations, `since` when it arrived."""

    key: str
    user: int
    cost: int
    since: float


def line(waiting: Iterable[Waiting], last_served: dict[int, float]) -> list[Waiting]:
    """Every waiting run in the order it will start: round robin between users."""
    by_user: dict[int, list[Waiting]] = {}
    for run in sorted(waiting, key=lambda w: (w.since, w.key)):
        by_user.setdefault(run.user, []).append(run)
    users = sorted(by_user, key=lambda u: (last_served.get(u, -math.inf), by_user[u][0].since, u))
    order: list[Waiting] = []
    for turn in range(max((len(runs) for runs in by_user.values()), default=0)):
        order += [by_user[u][turn] for u in users if turn < len(by_user[u])]
    return order


def take(order: list[Waiting], in_use: int, capacity: int) -> list[Waiting]:
    """The runs to start now: from the head of the line `order` while they fit in what `in_use`
    generations leave of `capacity` (0: no limit, every one starts)."""
    if capacity <= 0:
        return list(order)
    started: list[Waiting] = []
    for run in order:
        if in_use > 0 and in_use + run.cost > capacity:
            break
        started.append(run)
        in_use += run.cost
    return started
