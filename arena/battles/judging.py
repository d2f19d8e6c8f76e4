"""How a model judge's two judgements of one pair become one verdict. Pure: no Django, no model.

A judge sees each pair twice, once in each order (left answer first, then right answer
first), because judges favour a position (often the first answer shown). Each judgement is
stated in the battle's own left/right terms whatever the order shown, and the verdict is kept
only when both orders agree; otherwise the pair is a tie. A judge that always prefers the
answer shown first therefore yields ties, one that always prefers the same answer yields it.
The stored record (Battle.judgements) keeps both raw judgements beside the combined outcome.

A jury: a pair may be read by up to `MAX_JUDGES` judges, each in both orders. Each judge's
verdict is its order-consistent one (`combine_orders`); a judge with a reading missing (failed
for good) abstains. The pair's verdict is the one more than half of the judges who did not
abstain gave (`jury_verdict`); with no such majority (a split, or every judge abstaining) it is
a tie. One judge is the same rule as before: its order-consistent verdict, a tie when a reading
is missing. Each stored reading then also names its judge (catalogue slug) and carries the
judge's one-line reason; readings stored before juries name no judge: they are the battle's.
"""

from __future__ import annotations

LEFT, RIGHT, TIE, BOTH_BAD = "left", "right", "tie", "both_bad"  # Battle.Outcome's values
VERDICTS = frozenset({LEFT, RIGHT, TIE, BOTH_BAD})
ORDERS = ("left_first", "right_first")
MAX_JUDGES = 3
MAX_REASON_CHARS = 200


def combine_orders(first: str, second: str) -> str:
    """The outcome of a pair judged in both orders (`first`: the verdict with the left answer
    shown first, `second`: with the right answer first, both in left/right terms): the shared
    verdict when they agree, else a tie."""
    for verdict in (first, second):
        if verdict not in VERDICTS:
            raise ValueError(f"Not a verdict: {verdict!r}")
    return first if first == second else TIE


def judge_verdict(first: str, second: str) -> str:
    """One judge's verdict on a pair from its two readings (as `combine_orders`); "" when a
    reading is missing ("": that judge abstains)."""
    return combine_orders(first, second) if first and second else ""


def jury_verdict(verdicts: list[str]) -> str:
    """The pair's verdict from its judges' verdicts ("" for a judge who abstains): the verdict
    more than half of the judges who did not abstain gave, else a tie (a split, or nobody)."""
    given = [v for v in verdicts if v]
    if unknown := set(given) - VERDICTS:
        raise ValueError(f"Not verdicts: {sorted(unknown)!r}")
    return next((v for v in set(given) if 2 * given.count(v) > len(given)), TIE)


def judgement(order: str, raw: str, verdict: str, *, judge: str | None = None, reason: str | None = None) -> dict:
    """One entry of Battle.judgements: the order shown, the judge's raw text, its verdict, and
    (when given) the judge's slug and its one-line reason (cut to MAX_REASON_CHARS)."""
    if order not in ORDERS or verdict not in VERDICTS:
        raise ValueError(f"Not an order and a verdict: {order!r}, {verdict!r}")
    out = {"order": order, "raw": raw, "verdict": verdict}
    if judge is not None:
        out["judge"] = judge
    if reason is not None:
        out["reason"] = one_line(reason)
    return out


def one_line(text: str) -> str:
    """A reason as stored and shown: its whitespace folded to single spaces, at most MAX_REASON_CHARS."""
    folded = " ".join(str(text).split())
    return folded if len(folded) <= MAX_REASON_CHARS else folded[:MAX_REASON_CHARS - 1] + "…"


def by_judge(judgements: list[dict], default: str = "") -> dict[str, dict[str, dict]]:
    """A battle's readings per judge, in the order they first appear: {judge slug: {order:
    reading}}; a reading that names no judge (stored before juries) is `default`'s."""
    out: dict[str, dict[str, dict]] = {}
    for reading in judgements or ():
        out.setdefault(reading.get("judge") or default, {})[reading.get("order", "")] = reading
    return out


def seen_as(order: str, shown_first_wins: bool) -> str:
    """In left/right terms, the verdict "the answer shown first is better" (or the second)
    under `order`: the translation a judge's positional answer needs."""
    first_is_left = order == "left_first"
    return LEFT if first_is_left == shown_first_wins else RIGHT


def orders_agree(judgements: list[dict]) -> bool | None:
    """Whether the one judge said the same in both orders (None: not one judge's two readings,
    e.g. a person's verdict, or a jury's, whose tie may have other causes). False means the
    pair became a tie because the orders disagreed."""
    per_judge = by_judge(judgements)
    if len(per_judge) != 1 or len(judgements) != 2:
        return None
    [readings] = per_judge.values()
    verdicts = [reading.get("verdict") for reading in readings.values()]
    return verdicts[0] == verdicts[1] if len(verdicts) == 2 else None


def agreement(all_judgements) -> tuple[int, int]:
    """(judge-pairs on which a judge agreed with itself across the two orders, judge-pairs read
    in both): each judge of a jury counts for each pair it read twice."""
    agreed = total = 0
    for judgements in all_judgements:
        for readings in by_judge(judgements).values():
            if set(readings) == set(ORDERS):
                total += 1
                agreed += readings["left_first"].get("verdict") == readings["right_first"].get("verdict")
    return agreed, total
