"""The shape of a knockout bracket, free of the database (pure functions, tested alone).

Seeds are 1..n. Round 1 pairs them in standard tournament order, so the two best
seeds can meet only in the final: for 4, (1 v 4), (2 v 3); for 8, (1 v 8), (4 v 5),
(2 v 7), (3 v 6). Match `index` i of round r feeds match i // 2 of round r + 1, on its
left slot when i is even, its right slot when odd. Matches are played in order:
round by round, top to bottom; `number` counts them from 1 in that order.
"""

from __future__ import annotations

import random

SIZES = (4, 8)


def seed_order(n: int) -> list[int]:
    """The seeds top to bottom in round 1: consecutive pairs meet."""
    if n not in SIZES:
        raise ValueError(f"A bracket has 4 or 8 contestants, not {n}.")
    order = [1]
    while len(order) < n:
        m = len(order) * 2
        order = [s for seed in order for s in (seed, m + 1 - seed)]
    return order


def rounds(n: int) -> int:
    return n.bit_length() - 1  # 4 -> 2, 8 -> 3


def matches_in_round(n: int, round_: int) -> int:
    return n >> round_


def match_number(n: int, round_: int, index: int) -> int:
    """1-based position in playing order."""
    return sum(matches_in_round(n, r) for r in range(1, round_)) + index + 1


def feeds(round_: int, index: int) -> tuple[int, int, str]:
    """Where the winner of (round, index) goes: (round, index, "left"|"right")."""
    return round_ + 1, index // 2, "left" if index % 2 == 0 else "right"


def fed_by(n: int, round_: int, index: int, slot: str) -> int | None:
    """The number of the match whose winner fills this slot (None in round 1)."""
    if round_ == 1:
        return None
    return match_number(n, round_ - 1, index * 2 + (0 if slot == "left" else 1))


def seeding(items: list, how: str, rng: random.Random | None = None) -> list:
    """The contestants in seed order: as given, or shuffled."""
    items = list(items)
    if how == "random":
        (rng or random.SystemRandom()).shuffle(items)
    return items


def round_name(n: int, round_: int) -> str:
    left = rounds(n) - round_
    return {0: "Final", 1: "Semi-finals", 2: "Quarter-finals"}.get(left, f"Round {round_}")
