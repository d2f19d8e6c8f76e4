"""Quality against speed and memory: each catalogue entry's rating plotted against its measured
decode speed, its time to first token, and its memory, with the Pareto front marked (the entries no other entry
beats on both). Pure: the caller gives the points (the leaderboard page, a suite run's page).

A point is beaten ("dominated") when another is at least as good on both axes and better on
one: a higher or equal rating and a higher or equal speed (or a lower or equal memory). Equal
points do not beat each other, so both stay on the front.

Each dot carries a number (the entries by rating, best first, the same in both charts) and the
chart's key lists number, label, rating and measure: labels written beside the dots would
overlap wherever two variants sit close, which is where telling them apart matters most.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, NamedTuple, TypedDict

from .charts import scale, ticks

WIDTH, HEIGHT, LEFT, BOTTOM, PAD = 400, 270, 58, 50, 14
RATING_AXIS = "Rating (Elo scale)"
MARK_W, MARK_H = 8, 13  # a number's box, per digit and in height, at 13 px
# Where a dot's number goes, tried in turn: the first that overlaps no number placed before.
OFFSETS = [(7, -6), (7, 14), (-7, -6), (-7, 14), (0, -10), (0, 20)]


class Point(NamedTuple):
    entry: str  # the label: the entry's short label
    rating: float
    tokens_per_s: float | None  # median measured decode rate; None: never measured
    memory_mb: float | None  # None: holds no memory here (an endpoint)
    memory_measured: bool = False  # a worker's resident figure, not the catalogue's estimate
    name: str = ""  # the entry's full catalogue name (tooltips); empty: the label
    slug: str = ""
    first_token_s: float | None = None  # median time to first token; None: never measured
    speed_mixed: bool = False  # no answer of it ran alone: its speed was measured while others shared the worker


class Measure(TypedDict):
    axis: str
    unit: str
    better: int  # 1: higher is better, -1: lower is
    caption: str
    column: str
    digits: int


MEASURES: dict[str, Measure] = {
    "speed": {"axis": "Decode speed (tokens/s, median)", "unit": "tokens/s", "better": 1,
              "caption": "higher is better", "column": "Decode speed (tokens/s)", "digits": 1},
    "first-token": {"axis": "Time to first token (s, median)", "unit": "s", "better": -1,
                    "caption": "lower is better", "column": "Time to first token (s)", "digits": 2},
    "memory": {"axis": "Memory (MB)", "unit": "MB", "better": -1, "caption": "lower is better",
               "column": "Memory (MB)", "digits": 1},
}


def pareto_front(points: Sequence[tuple[Hashable, float, float]]) -> set[Hashable]:
    """The keys of the (key, a, b) points that no other point beats on both a and b (higher is
    better on both: pass a memory as its negative)."""
    return {key for key, a, b in points
            if not any(a2 >= a and b2 >= b and (a2 > a or b2 > b) for _k, a2, b2 in points)}


def charts(points: Sequence[Point]) -> list[dict]:
    """The charts (rating against tokens/s, against time to first token, against memory), each
    only with the points that have that measure; an empty list when no point has any."""
    ranked = sorted(points, key=lambda p: -p.rating)
    numbered = [(i, p) for i, p in enumerate(ranked, start=1)]
    speed = [(n, p, p.tokens_per_s) for n, p in numbered if p.tokens_per_s is not None]
    first_token = [(n, p, p.first_token_s) for n, p in numbered if p.first_token_s is not None]
    memory = [(n, p, p.memory_mb) for n, p in numbered if p.memory_mb is not None]
    built = [_chart("speed", speed), _chart("first-token", first_token), _chart("memory", memory)]
    return [chart for chart in built if chart]


def _chart(key: str, measured: list[tuple[int, Point, float]]) -> dict:
    if not measured:
        return {}
    measure = MEASURES[key]
    front = pareto_front([(n, p.rating, measure["better"] * x) for n, p, x in measured])
    xs, ys = [x for *_p, x in measured], [p.rating for _n, p, _x in measured]
    x_low, x_high = _span(min(xs), max(xs), floor=0.0)
    y_low, y_high = _span(min(ys), max(ys))
    to_x = scale(x_low, x_high, LEFT, WIDTH - PAD)
    to_y = scale(y_low, y_high, HEIGHT - BOTTOM, PAD)
    dots: list[dict[str, Any]] = [
        {"number": n, "name": p.entry, "full": p.name or p.entry, "slug": p.slug, "cx": to_x(x),
         "cy": to_y(p.rating), "front": n in front, "x": x, "rating": p.rating,
         "estimate": key == "memory" and not p.memory_measured, "mixed": key == "speed" and p.speed_mixed}
        for n, p, x in measured]
    _place_numbers(dots)
    line = sorted((d for d in dots if d["front"]), key=lambda d: d["cx"])
    return {"key": key, "x_label": measure["axis"], "unit": measure["unit"], "better": measure["caption"],
            "column": measure["column"], "digits": measure["digits"], "y_label": RATING_AXIS,
            "width": WIDTH, "height": HEIGHT, "dots": dots,
            "front": " ".join(f"{d['cx']},{d['cy']}" for d in line),
            "x_ticks": [{"at": to_x(v), "label": f"{v:g}"} for v in ticks(x_low, x_high)],
            "y_ticks": [{"at": to_y(v), "label": f"{v:g}"} for v in ticks(y_low, y_high)],
            "left": LEFT, "bottom": HEIGHT - BOTTOM, "right": WIDTH - PAD, "top": PAD,
            "x_mid": (LEFT + WIDTH - PAD) / 2, "y_mid": (PAD + HEIGHT - BOTTOM) / 2}


def _place_numbers(dots: list[dict]) -> None:
    """Each dot's number beside it (tx, ty, anchor), where it overlaps no number placed before
    (the first place tried when all overlap: the key below the chart still names every dot)."""
    placed: list[tuple[float, float, float, float]] = []
    for dot in sorted(dots, key=lambda d: d["number"]):
        width = MARK_W * len(str(dot["number"]))
        boxes = []
        for dx, dy in OFFSETS:
            x0 = dot["cx"] + dx - (width if dx < 0 else width / 2 if dx == 0 else 0)
            boxes.append((dx, dy, (x0, dot["cy"] + dy - MARK_H + 2, x0 + width, dot["cy"] + dy + 2)))
        dx, dy, box = next((b for b in boxes if not any(_overlap(b[2], p) for p in placed)), boxes[0])
        placed.append(box)
        dot.update(tx=round(dot["cx"] + dx, 1), ty=round(dot["cy"] + dy, 1),
                   anchor="end" if dx < 0 else "middle" if dx == 0 else "start")


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _span(low: float, high: float, floor: float | None = None) -> tuple[float, float]:
    """The axis range: the values with a margin, never a zero width."""
    margin = (high - low) * 0.1 or max(abs(high) * 0.1, 1.0)
    low, high = low - margin, high + margin
    return (max(low, floor) if floor is not None else low), high
