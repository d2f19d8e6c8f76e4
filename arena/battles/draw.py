"""Which two contestants an anonymous battle gets: the pick rule, pure (no Django, no clock).

The user writes a prompt; the app picks the pair. The rule, in order:

1. The allowed entries: the enabled catalogue entries less those staff excluded from the draw
   (`ArenaExclusion`), each once, and less base models (`Candidate.chat` false): a pretrained
   model continues the prompt as plain text instead of answering it, so against a chat model its
   verdict is wasted and its style names it. Staff may let a base model in (the entry's
   `in_chat_draws`).
2. The allowed pairs: two different entries (never one entry on both sides) whose memory
   estimates fit together in the orchestrator's largest node budget (`budget_mb`; None: no
   budget is known, every pair fits). A battle is admitted all or nothing, so a pair that no
   node holds at once would wait for ever.
3. A share of the battles (`random_share`, the setting ARENA_ANONYMOUS_RANDOM_SHARE, 25% by
   default) takes one allowed pair uniformly at random: every pair keeps being sampled, whatever
   the verdicts say, so the leaderboard sees the whole catalogue. Reason: "drawn at random".
4. The rest favour the pair whose order the current verdicts leave least resolved: the widest
   95% Wilson interval of the first entry's win rate against the second (ties and "both bad"
   count half; a pair that never met has width 1, the widest there is). Pairs within
   `EQUAL_WIDTH` of the widest count as equals; among equals the pairs with more variants
   already warm (loaded on a worker, so nobody waits for a cold start) are preferred, then one is
   taken at random. Reason: "chosen: their order was the least settled".
5. The two sides are placed at random (left or right says nothing of the rule).

Randomness is passed in (`random.Random`): the same seed and inputs give the same pick.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

RANDOM = "random"
LEAST_SETTLED = "least_settled"
REASONS = {RANDOM: "drawn at random", LEAST_SETTLED: "chosen: their order was the least settled"}

Z = 1.96  # a 95% interval
EQUAL_WIDTH = 0.02  # interval widths this close to the widest count as equal

Pair = tuple[str, str]  # two slugs, in sorted order


@dataclass(frozen=True)
class Candidate:
    """An entry that may be drawn: its slug, the memory its worker reserves, whether one is warm,
    and whether it answers a chat prompt (false: a base model staff did not let into chat draws)."""

    slug: str
    memory_mb: float = 0.0
    warm: bool = False
    chat: bool = True


@dataclass(frozen=True)
class Pick:
    left: str
    right: str
    reason: str  # RANDOM or LEAST_SETTLED


@dataclass(frozen=True)
class Record:
    """The verdicts between a sorted pair: how many, and the first entry's score (wins, ties half)."""

    n: int = 0
    score: float = 0.0


def key(a: str, b: str) -> Pair:
    return (a, b) if a <= b else (b, a)


def tally(rows: Iterable[tuple[str, str, float]]) -> dict[Pair, Record]:
    """(left slug, right slug, score of left) verdicts summed per sorted pair; a model against
    itself says nothing of an order and is left out."""
    out: dict[Pair, Record] = {}
    for left, right, score in rows:
        if left == right:
            continue
        pair = key(left, right)
        first_score = score if pair[0] == left else 1.0 - score
        old = out.get(pair, Record())
        out[pair] = Record(old.n + 1, old.score + first_score)
    return out


def interval_width(record: Record) -> float:
    """The width of the 95% Wilson interval of the first entry's win rate (1 with no verdicts)."""
    n = record.n
    if n <= 0:
        return 1.0
    p = min(1.0, max(0.0, record.score / n))
    spread = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return 2 * spread / (1 + Z * Z / n)


def allowed_pairs(candidates: Sequence[Candidate], *, excluded: Iterable[str] = (),
                  budget_mb: float | None = None) -> list[Pair]:
    """Every pair of two different, not excluded chat entries that fits the budget together, sorted."""
    out = set(excluded)
    by_slug: dict[str, Candidate] = {}
    for c in candidates:
        if c.slug not in out:
            by_slug.setdefault(c.slug, c)
    pairs = []
    for a, b in combinations(sorted(slug for slug, c in by_slug.items() if c.chat), 2):
        if budget_mb is None or by_slug[a].memory_mb + by_slug[b].memory_mb <= budget_mb:
            pairs.append((a, b))
    return pairs


def draw(candidates: Sequence[Candidate], verdicts: Mapping[Pair, Record], rng: random.Random, *,
         random_share: float, excluded: Iterable[str] = (), budget_mb: float | None = None) -> Pick | None:
    """The pair for the next anonymous battle by the rule above, or None if no pair is allowed."""
    pairs = allowed_pairs(candidates, excluded=excluded, budget_mb=budget_mb)
    if not pairs:
        return None
    if rng.random() < random_share:
        pair, reason = rng.choice(pairs), RANDOM
    else:
        pair, reason = rng.choice(least_settled(pairs, verdicts, candidates)), LEAST_SETTLED
    left, right = pair if rng.random() < 0.5 else pair[::-1]
    return Pick(left, right, reason)


def least_settled(pairs: Sequence[Pair], verdicts: Mapping[Pair, Record],
                  candidates: Sequence[Candidate]) -> list[Pair]:
    """The pairs the rule's step 4 chooses among: widest interval (within EQUAL_WIDTH), then most warm."""
    warm = {c.slug for c in candidates if c.warm}
    widths = {pair: interval_width(verdicts.get(pair, Record())) for pair in pairs}
    widest = max(widths.values())
    near = [pair for pair in pairs if widths[pair] >= widest - EQUAL_WIDTH]
    warmest = max(sum(slug in warm for slug in pair) for pair in near)
    return [pair for pair in near if sum(slug in warm for slug in pair) == warmest]
