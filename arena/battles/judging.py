"""How a model judge's two judgements of one pair become one verdict. Pure: no Django, no model.

A judge sees each pair twice, once in each order (left answer first, then right answer
first), because judges favour a position (often the first answer shown). Each judgement is
stated in the battle's own left/right terms whatever the order shown, and the verdict is kept
only when both orders agree; otherwise the pair is a tie. A judge that always prefers the
answer shown first therefore yields ties, one that always prefers the same answer yields it.
The stored record (Battle.judgements) keeps both raw judgements beside the combined outcome.
"""

from __future__ import annotations

LEFT, RIGHT, TIE, BOTH_BAD = "left", "right", "tie", "both_bad"  # Battle.Outcome's values
VERDICTS = frozenset({LEFT, RIGHT, TIE, BOTH_BAD})
ORDERS = ("left_first", "right_first")


def combine_orders(first: str, second: str) -> str:
    """The outcome of a pair judged in both orders (`first`: the verdict with the left answer
    shown first, `second`: with the right answer first, both in left/right terms): the shared
    verdict when they agree, else a tie."""
    for verdict in (first, second):
        if verdict not in VERDICTS:
            raise ValueError(f"Not a verdict: {verdict!r}")
    return first if first == second else TIE


def judgement(order: str, raw: str, verdict: str) -> dict:
    """One entry of Battle.judgements: the order shown, the judge's raw text, its verdict."""
    if order not in ORDERS or verdict not in VERDICTS:
        raise ValueError(f"Not an order and a verdict: {order!r}, {verdict!r}")
    return {"order": order, "raw": raw, "verdict": verdict}


def seen_as(order: str, shown_first_wins: bool) -> str:
    """In left/right terms, the verdict "the answer shown first is better" (or the second)
    under `order`: the translation a judge's positional answer needs."""
    first_is_left = order == "left_first"
    return LEFT if first_is_left == shown_first_wins else RIGHT


def orders_agree(judgements: list[dict]) -> bool | None:
    """Whether the judge said the same in both orders (None: not two readings, e.g. a person's
    verdict). False means the pair became a tie because the orders disagreed."""
    verdicts = [reading.get("verdict") for reading in judgements or ()]
    if len(verdicts) != 2:
        return None
    return verdicts[0] == verdicts[1]


def agreement(all_judgements) -> tuple[int, int]:
    """(pairs on which the judge agreed with itself across the two orders, pairs judged in both)."""
    agreed = total = 0
    for judgements in all_judgements:
        same = orders_agree(judgements)
        if same is not None:
            total += 1
            agreed += same
    return agreed, total
