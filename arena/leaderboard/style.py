"""Style covariates for style control, as LMArena computes them ("Does style matter?
Disentangling style and substance in Chatbot Arena", LMSYS, August 2024).

Each battle gets one row: for each style feature of the two answers, the normalised
difference (left - right) / (left + right) (0 when both are 0), then each column standardised
over the battles fitted (mean 0, standard deviation 1; a column that never varies stays 0).
Length is the answer's generated token count (the engine's own count, as LMArena counts
tokens); the Markdown elements are headers, list items and bold spans (arena.markdown).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arena.markdown import element_counts

FEATURES = ("length", "headers", "list_items", "bold")
LABELS = {"length": "Answer length (tokens)", "headers": "Headers", "list_items": "List items", "bold": "Bold"}


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
