"""The chart builders (arena/leaderboard/charts.py, frontier.py) and their templates, over the
eight default catalogue entries: every model shown by a label no other shares, long labels
wrapped onto lines and never cut, and every axis titled with its unit."""

from __future__ import annotations

from itertools import pairwise

import pytest
from django.template.loader import render_to_string

from arena.catalogue import labels
from arena.catalogue.defaults import DEFAULT_ENTRIES
from arena.leaderboard.charts import LINE_CHARS, LINE_H, RATING_AXIS, Name, distinct, interval_chart, wrap
from arena.leaderboard.frontier import Point, charts

from .charts_html import axis_titles, cell_labels, svg_labels, svgs

NAMES = {e["slug"]: Name(labels.derive(e["name"], e.get("engine", "transformers"), e["kind"], "auto", e["gguf_file"]),
                         e["name"]) for e in DEFAULT_ENTRIES}
LONG = Name("Qwen2.5 Coder 32B · vLLM server · spec ← Qwen2.5 Coder 0.5B",
            "Qwen2.5 Coder 32B Instruct, vLLM server, speculative with Qwen2.5 Coder 0.5B")


def rows(names: dict[str, Name]) -> list[tuple[str, Name, float, float, float]]:
    return [(slug, name, 1100.0 - 20 * i, 1040.0 - 20 * i, 1160.0 - 20 * i)
            for i, (slug, name) in enumerate(names.items())]


def test_eight_default_entries_and_their_full_names_would_collide_once_cut():
    """Why labels: the names cut to ~20 characters, as the charts did, read alike."""
    assert len(NAMES) == 8
    assert len({name.full[:20] for name in NAMES.values()}) < 8
    assert len({name.label for name in NAMES.values()}) == 8


def test_wrap_breaks_at_separators_then_words_and_keeps_every_character():
    assert wrap("SmolLM2 135M · llama.cpp Q4_1 · spec", 28) == ["SmolLM2 135M", "· llama.cpp Q4_1 · spec"]
    assert wrap("SmolLM2 135M · llama.cpp Q4_1 · spec") == ["SmolLM2 135M · llama.cpp Q4_1 · spec"]
    assert wrap("Gemma 3 270M") == ["Gemma 3 270M"]
    lines = wrap(LONG.label)
    assert len(lines) > 1 and all(len(line) <= LINE_CHARS for line in lines)
    assert "".join(lines).replace(" ", "").replace("·", "") == LONG.label.replace(" ", "").replace("·", "")
    assert wrap("x" * 70, 28) == ["x" * 28, "x" * 28, "x" * 14]  # a word too long is split, not cut


def test_distinct_adds_the_slug_to_a_label_already_shown():
    shown = distinct([Name("Smol", "a"), Name("smol", "b"), Name("Gemma", "c")], ["one", "two", "three"])
    assert [n.label for n in shown] == ["Smol", "smol · two", "Gemma"]


def test_the_interval_chart_shows_every_default_label_whole_and_distinct_on_a_titled_axis():
    names = {**NAMES, "long": LONG}
    chart = interval_chart(rows(names))
    (svg,) = svgs(render_to_string("leaderboard/_intervals.html", {"chart": chart}))
    shown = svg_labels(svg)
    assert shown == [" ".join(" ".join(wrap(n.label)).split()) for n in names.values()]
    assert len(set(shown)) == len(shown) == 9
    assert not any("…" in label for label in shown)
    long_bar = next(b for b in chart["bars"] if b["slug"] == "long")
    assert len(long_bar["lines"]) > 1 and len(list(svg.iter("tspan"))) > len(names)
    assert axis_titles(svg) == [RATING_AXIS]
    tick_values = [int(t.text) for t in svg.iter("text") if t.get("class") == "tick"]
    assert len(tick_values) >= 3 and tick_values == sorted(tick_values)
    titles = ["".join(t.itertext()) for t in svg.iter("title")]
    assert f"{LONG.full}: rating 940, 95% interval 880 to 1000" in titles  # the full name stays available
    # A row is as tall as its label's lines: its bar under the last line, the next row's label under its bar.
    for bar in chart["bars"]:
        assert bar["y"] - 4 > bar["text_y"] + (len(bar["lines"]) - 1) * LINE_H + 3  # dot clear of descenders
    for a, b in pairwise(chart["bars"]):
        assert b["text_y"] - 13 > a["y"] + 4  # the next label's capitals clear of this dot
    assert chart["bars"][-1]["y"] < chart["axis_y"] < chart["height"] - 40  # room for ticks and the title


@pytest.fixture
def points() -> list[Point]:
    """Eight variants, several close together on both measures (as siblings are)."""
    speeds = [12.0, 12.5, 40.0, 41.0, 9.0, 55.0, 20.0, 21.0]
    memory = [540.0, 545.0, 120.0, 125.0, 300.0, 110.0, 230.0, 232.0]
    return [Point(name.label, 1000.0 + 3 * (i % 2), speeds[i], memory[i], False, name.full, slug)
            for i, (slug, name) in enumerate(NAMES.items())]


def test_the_quality_charts_number_their_dots_and_name_each_in_a_key_with_titled_axes(points):
    speed, memory = charts(points)
    for chart, axis, unit in ((speed, "Decode speed (tokens/s, median)", "Decode speed (tokens/s)"),
                              (memory, "Memory (MB)", "Memory (MB)")):
        html = render_to_string("leaderboard/_frontier.html", {"chart": chart})
        (svg,) = svgs(html)
        assert axis_titles(svg) == [axis, "Rating (Elo scale)"]
        numbers = ["".join(t.itertext()) for t in svg.iter("text") if t.get("class") == "dot-number"]
        assert sorted(numbers, key=int) == [str(n) for n in range(1, 9)]
        key = cell_labels(html)
        assert sorted(key) == sorted(n.label for n in NAMES.values()) and len(set(key)) == 8
        assert f"<th scope=\"col\">{unit}</th>" in html
        assert all(f'title="{n.full}"' in html for n in NAMES.values())
    # The same entry has the same number in both charts.
    assert {d["slug"]: d["number"] for d in speed["dots"]} == {d["slug"]: d["number"] for d in memory["dots"]}


def test_dot_numbers_do_not_overlap_where_dots_sit_close(points):
    crowded = [p._replace(tokens_per_s=30.0 + 0.01 * i, rating=1000.0) for i, p in enumerate(points[:4])]
    (speed,) = [c for c in charts(crowded) if c["key"] == "speed"]
    boxes = [(d["tx"] - (8 if d["anchor"] == "end" else 0), d["ty"] - 10) for d in speed["dots"]]
    assert len({(round(x), round(y)) for x, y in boxes}) == 4
    for i, (x1, y1) in enumerate(boxes):
        for x2, y2 in boxes[i + 1:]:
            assert abs(x1 - x2) >= 8 or abs(y1 - y2) >= 12
