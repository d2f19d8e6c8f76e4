"""What the leaderboard's server-rendered SVG charts share: a linear scale from values to
pixels, round tick values, and the names charts show. The builders return dicts of
coordinates; the templates draw them.

Names: a chart shows each catalogue entry's label (ModelEntry.label: short, and no two alike),
wrapped onto lines where it is long, never cut. A name cut to fit ("SmolLM2 135M Inst…") made
"SmolLM2 135M Instruct, llama.cpp Q4_1" and its speculative variant look identical: the very
variants the arena exists to tell apart. The full catalogue name stays in each mark's <title>.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

from arena.catalogue.labels import SEP

# The interval chart: each model's label on its own line(s), its interval bar under it, the
# rating axis below all. Labels above their bars (not in a column beside them) keep the chart
# narrow enough to read on a phone without scrolling sideways.
WIDTH, PAD, TOP = 400, 20, 4
LINE_CHARS, LINE_H = 50, 16  # about 50 characters of 13 px text fill WIDTH
FIRST_BASELINE, BAR_BELOW, ROW_GAP = 13, 10, 8  # a row's first baseline, its bar under the last, the next row
AXIS_H = 46  # tick labels and the axis title under the plot
RATING_AXIS = "Rating (Bradley–Terry, Elo scale; 1000 = average)"
INTERVAL_KEY = "dot: rating · bar: 95% confidence interval"
PROVISIONAL_MARK = "provisional: too few verdicts to rank"  # under a provisional entry's label


class Name(NamedTuple):
    label: str  # what a chart or a cramped table shows (unique among the names shown)
    full: str  # the catalogue name: tooltips and the ratings table


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


def distinct(names: Sequence[Name], keys: Sequence[str]) -> list[Name]:
    """`names` with any label another one already shows (ignoring case) followed by its key (a
    slug, unique), so no two labels shown side by side are equal, whatever the catalogue holds."""
    seen: set[str] = set()
    out = []
    for name, key in zip(names, keys, strict=True):
        label = name.label if name.label.casefold() not in seen else f"{name.label}{SEP}{key}"
        seen.add(label.casefold())
        out.append(Name(label, name.full))
    return out


def wrap(text: str, width: int = LINE_CHARS) -> list[str]:
    """`text` on lines of at most `width` characters, broken after a label's separators (" · ")
    where it can, else between words; a word longer than a line is split, never dropped: the
    lines joined hold every character of `text`."""
    parts = text.split(SEP)
    lines: list[str] = []
    for i, part in enumerate(parts):
        piece = part if i == 0 else "· " + part
        joined = f"{lines[-1]}{SEP}{part}" if lines else piece
        if lines and i and len(joined) <= width:
            lines[-1] = joined
        else:
            lines += _words(piece, width)
    return lines or [""]


def _words(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
            continue
        while len(word) > width:
            lines.append(word[:width])
            word = word[width:]
        lines.append(word)
    return lines


def interval_chart(rows: Sequence[tuple]) -> dict:
    """Each model's rating as a dot on its 95% interval, one row per model (in the given order):
    its label wrapped on the lines above its bar, all on one rating axis with ticks and a title.
    `rows`: (slug, name, rating, lower, upper[, provisional]); a provisional entry gets a line of
    PROVISIONAL_MARK under its label and a dashed bar."""
    if not rows:
        return {}
    low = min(row[3] for row in rows) - 10
    high = max(row[4] for row in rows) + 10
    left, right = PAD, WIDTH - PAD
    x = scale(low, high, left, right)
    bars, y = [], TOP
    for slug, name, rating, lower, upper, *rest in rows:
        provisional = bool(rest and rest[0])
        lines = wrap(name.label)
        text_y = y + FIRST_BASELINE
        mark_y = text_y + len(lines) * LINE_H  # the provisional mark's line, under the label's
        bar_y = text_y + (len(lines) - 1 + provisional) * LINE_H + BAR_BELOW
        bars.append({"slug": slug, "name": name, "lines": lines, "text_y": text_y, "line_h": LINE_H, "y": bar_y,
                     "x": x(rating), "x1": x(lower), "x2": x(upper), "rating": rating, "lower": lower, "upper": upper,
                     "provisional": provisional, "mark_y": mark_y})
        y = bar_y + ROW_GAP
    axis_y = y + 4
    return {"width": WIDTH, "height": axis_y + AXIS_H, "bars": bars, "axis_y": axis_y, "top": TOP,
            "left": left, "right": right, "mid": WIDTH / 2,
            "ticks": [{"at": x(v), "label": f"{v:g}"} for v in ticks(low, high)],
            "axis_title": RATING_AXIS, "key": INTERVAL_KEY, "mark": PROVISIONAL_MARK,
            "provisional": any(bar["provisional"] for bar in bars)}
