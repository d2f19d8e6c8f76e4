"""Prompts like this one: which stored prompts are nearest a pasted one. Pure, no Django.

No embedding model is installed in this application's environment or packaged with it
(sentence-transformers and its models are not dependencies, and nothing is downloaded at run
time), so the similarity is a text one from a maintained library: chrF, the character n-gram
F-score of sacrebleu (Popović 2015; n-grams of 1-6 characters and words of 1-2, β = 2), which
rewards shared words and word pieces whatever their order. It sees wording, not meaning: "fix
this bug" and "debug my code" share little. The page says so.
"""

from __future__ import annotations

from collections.abc import Mapping

from sacrebleu import __version__ as SACREBLEU_VERSION
from sacrebleu.metrics import CHRF

MAX_CHARS = 2_000  # each prompt is compared on its first 2,000 characters
METHOD = (f"chrF (character n-gram F-score, sacrebleu {SACREBLEU_VERSION}): a text similarity of wording, "
          "not meaning; no embedding model is installed here")

_CHRF = CHRF()


def score(query: str, prompt: str) -> float:
    """chrF of `prompt` against `query`, 0 (nothing shared) to 100 (the same text)."""
    q, p = query[:MAX_CHARS].strip(), prompt[:MAX_CHARS].strip()
    if not q or not p:
        return 0.0
    return float(_CHRF.sentence_score(p, [q]).score)


def scores(query: str, prompts: Mapping[str, str]) -> dict[str, float]:
    """Each prompt's similarity to `query`, by key (each distinct text scored once)."""
    by_text: dict[str, float] = {}
    out = {}
    for key, text in prompts.items():
        if text not in by_text:
            by_text[text] = score(query, text)
        out[key] = by_text[text]
    return out


def nearest(scored: Mapping[str, float], count: int, floor: float) -> list[str]:
    """The keys of the `count` highest scores at or above `floor`, best first (ties by key, so
    the same verdicts give the same choice)."""
    kept = sorted((k for k, s in scored.items() if s >= floor), key=lambda k: (-scored[k], k))
    return kept[:count]
