"""Reading the leaderboard's charts back from rendered HTML, as a reader sees them: the label
each chart shows per model (a wrapped SVG label's lines joined), the axis titles."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET


def svgs(html: str) -> list[ET.Element]:
    return [ET.fromstring(svg) for svg in re.findall(r"<svg\b.*?</svg>", html, re.S)]


NOT_LABELS = {"tick", "axis-title", "dot-number", "provisional-mark"}  # the mark under a label is not one


def svg_labels(svg: ET.Element) -> list[str]:
    """The model labels an SVG chart shows: every text but its ticks, axis titles and dot numbers
    (a wrapped label's lines joined by a space)."""
    return [" ".join(" ".join(t.itertext()).split()) for t in svg.iter("text") if t.get("class") not in NOT_LABELS]


def axis_titles(svg: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in svg.iter("text") if t.get("class") == "axis-title"]


def cell_labels(html: str, table_id: str = "", element_class: str = "chart-label") -> list[str]:
    """The text of the `element_class` cells (or spans) of a table (or the whole page), tags stripped."""
    if table_id:
        html = html.split(f'id="{table_id}"')[1].split("</table>")[0]
    cells = re.findall(rf'<(th|td|span)\b[^>]*class="{element_class}"[^>]*>(.*?)</\1>', html, re.S)
    return [" ".join(re.sub(r"<[^>]+>", " ", c).split()) for _tag, c in cells]


def section(html: str, element_id: str, end: str) -> str:
    return html.split(f'id="{element_id}"')[1].split(end)[0]
