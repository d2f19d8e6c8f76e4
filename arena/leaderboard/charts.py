"""What the leaderboard's server-rendered SVG charts share: a linear scale from values to
pixels and round tick values. The views build dicts of coordinates; the templates draw them."""

from __future__ import annotations

import math
from collections.abc import Callable


def scale(low: float, high: float, start: float, end: float) -> Callable[[float], float]:
    """Maps [low, high] onto [start, end] pixels (end < start flips an axis: SVG's y grows down)."""
    width = (high - low) or 1.0
    return lambda v: round(start + (v - low) / width * (end - start), 1)


def ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About `count` round values (1, 2 or 5 times a power of ten apart) within [low, high]."""
    if high <= low:
        return [low]
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step) * step
    return [round(first + i * step, 10) for i in range(int((high - first) / step) + 1)]
