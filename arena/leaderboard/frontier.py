"""Quality against speed and memory: each catalogue entry's rating plotted against its measured
decode speed, and against its memory, with the Pareto front marked (the entries no other entry
beats on both). Pure: the caller gives the points (the leaderboard page, a suite run's page).

A point is beaten ("dominated") when another is at least as good on both axes and better on
one: a higher or equal rating and a higher or equal speed (or a lower or equal memory). Equal
points do not beat each other, so both stay on the front.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import NamedTuple

from .charts import scale, ticks

WIDTH, HEIGHT, LEFT, BOTTOM, PAD = 520, 260, 48, 32, 12


class Point(NamedTuple):
    entry: str  # the label: the entry's name
    rating: float
    tokens_per_s: float | None  # median measured decode rate; None: never measured
    memory_mb: float | None  # None: holds no memory here (an endpoint)
    memory_measured: bool = False  # a worker's resident figure, not the catalogue's estimate


def pareto_front(points: Sequence[tuple[Hashable, float, float]]) -> set[Hashable]:
    """The keys of the (key, a, b) points that no other point beats on both a and b (higher is
    better on both: pass a memory as its negative)."""
    return {key for key, a, b in points
            if not any(a2 >= a and b2 >= b and (a2 > a or b2 > b) for _k, a2, b2 in points)}


def charts(points: Sequence[Point]) -> list[dict]:
    """The two charts (rating against tokens/s, rating against memory), each only with the
    points that have that measure; an empty list when no point has either."""
    speed = [(p, p.tokens_per_s) for p in points if p.tokens_per_s is not None]
    memory = [(p, p.memory_mb) for p in points if p.memory_mb is not None]
    built = [
        _chart("speed", "Decode speed (tokens/s, median), higher is better", speed, better=1),
        _chart("memory", "Memory (MB), lower is better", memory, better=-1),
    ]
    return [chart for chart in built if chart]


def _chart(key: str, x_label: str, measured: list[tuple[Point, float]], better: int) -> dict:
    if not measured:
        return {}
    front = pareto_front([(i, p.rating, better * x) for i, (p, x) in enumerate(measured)])
    xs, ys = [x for _p, x in measured], [p.rating for p, _x in measured]
    x_low, x_high = _span(min(xs), max(xs), floor=0.0)
    y_low, y_high = _span(min(ys), max(ys))
    to_x = scale(x_low, x_high, LEFT, WIDTH - PAD)
    to_y = scale(y_low, y_high, HEIGHT - BOTTOM, PAD)
    dots = [{"name": p.entry, "cx": to_x(x), "cy": to_y(p.rating), "front": i in front, "x": x,
             "rating": p.rating, "estimate": key == "memory" and not p.memory_measured}
            for i, (p, x) in enumerate(measured)]
    line = sorted((d for d in dots if d["front"]), key=lambda d: d["cx"])
    return {"key": key, "x_label": x_label, "width": WIDTH, "height": HEIGHT, "dots": dots,
            "front": " ".join(f"{d['cx']},{d['cy']}" for d in line),
            "x_ticks": [{"at": to_x(v), "label": f"{v:g}"} for v in ticks(x_low, x_high)],
            "y_ticks": [{"at": to_y(v), "label": f"{v:g}"} for v in ticks(y_low, y_high)],
            "left": LEFT, "bottom": HEIGHT - BOTTOM, "right": WIDTH - PAD, "top": PAD}


def _span(low: float, high: float, floor: float | None = None) -> tuple[float, float]:
    """The axis range: the values with a margin, never a zero width."""
    margin = (high - low) * 0.1 or max(abs(high) * 0.1, 1.0)
    low, high = low - margin, high + margin
    return (max(low, floor) if floor is not None else low), high
