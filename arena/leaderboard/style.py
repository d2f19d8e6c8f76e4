"""Style covariates for style control, as LMArena computes them ("Does style matter?
Disentangling style and substance in Chatbot Arena", LMSYS, August 2024).

Each battle gets one row: for each style feature of the two answers, the normalised
difference (left - right) / (left + right) (0 when both are 0), then each column standardised
over the battles fitted (mean 0, standard deviation 1; a column that never varies stays 0).
Length is the answer's generated token count (the engine's own count, as LMArena counts
tokens); the Markdown elements are headers, list items and bold spans, counted by regular
expressions outside fenced code blocks, as LMArena counts them. (The renderer's own parser,
arena.markdown's markdown-it, was measured at about 7 ms per 500-character answer: a page
that reads every answer of thousands of battles cannot afford it; these take microseconds.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

FEATURES = ("length", "headers", "list_items", "bold")
LABELS = {"length": "Answer length (tokens)", "headers": "Headers", "list_items": "List items", "bold": "Bold"}

_FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?(?:^ {0,3}\1|\Z)", re.M | re.S)  # a code block: not Markdown
_PATTERNS = {
    "headers": re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)", re.M),  # "# Title", not "#hashtag"
    "list_items": re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\S", re.M),  # "- a", "* a", "1. a", "2) a"
    "bold": re.compile(r"\*\*(?=\S)[^\n]*?\S\*\*|__(?=\S)[^\n]*?\S__"),  # "**a**", "__a__"
}


def element_counts(text: str) -> dict[str, int]:
    """How many headers, list items and bold spans the answer's Markdown has (code blocks aside)."""
    prose = _FENCED.sub("", text or "")
    return {name: len(pattern.findall(prose)) for name, pattern in _PATTERNS.items()}


def answer_style(text: str, tokens: int) -> dict[str, int]:
    """An answer's style: its length in generated tokens and its Markdown element counts."""
    return {"length": tokens, **element_counts(text)}


def normalised_difference(a: float, b: float) -> float:
    return (a - b) / (a + b) if a + b else 0.0


def design_matrix(pairs: Sequence[tuple[dict, dict]]) -> np.ndarray:
    """One standardised row of FEATURES per (left style, right style) battle."""
    raw = np.array([[normalised_difference(left[f], right[f]) for f in FEATURES] for left, right in pairs],
                   dtype=float).reshape(len(pairs), len(FEATURES))
    if not len(raw):
        return raw
    std = raw.std(axis=0)
    centred = raw - raw.mean(axis=0)
    return np.divide(centred, std, out=np.zeros_like(raw), where=std > 0)
