"""A rater link's queue of pairs. Pure: no Django (tested on plain values).

Every link of a run sees the run's pairs in an order of its own (shuffled by the link's seed),
each pair at most once (`judged` leaves the queue), with its sides labelled A and B by the
link's position: a pair shown "left as A" to links 0, 2, 4... is shown "right as A" to links
1, 3, 5..., so across raters each pair is shown both ways round, and within one link about half
the pairs are shown each way (which way a pair starts is a fixed coin of its own ids)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
LEFT, RIGHT = "left", "right"


def coin(key: Hashable) -> int:
    """0 or 1, fixed for a pair's key (not Python's salted hash: the same in every process)."""
    return hashlib.sha256(repr(key).encode()).digest()[0] & 1


def a_side(key: Hashable, position: int) -> str:
    """Which side of the pair is labelled A for the link at `position`: links of adjacent
    positions see every pair opposite ways round."""
    return LEFT if (coin(key) + position) % 2 == 0 else RIGHT


def queue(pairs: Sequence[K], judged: set[K] | frozenset[K], position: int, seed: int) -> list[tuple[K, str]]:
    """The pairs left for one link, in its order, each with its A side."""
    left = sorted((key for key in set(pairs) if key not in judged), key=repr)
    random.Random(seed).shuffle(left)
    return [(key, a_side(key, position)) for key in left]
