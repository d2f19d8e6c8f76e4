"""Whether a text names a model: the words a blind judge must not read in an answer.

Pure (no Django), so the rule is tested on strings. An alias matches case-insensitively at
the start of a word and must end a word, allowing a version, a plural or a possessive after
it: "Gemma" matches "gemma", "Gemma's", "Gemma3" and "Gemma-3 270M" but not "Gemmation";
"Google" does not match "Googleplex"; "Bard" does not match "bombarding". The words of a
multi-word alias may be joined by any run of blanks, hyphens or underscores, or by nothing:
"Hugging Face" matches "hugging  face", "Hugging-Face" and "HuggingFace".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

ALNUM = r"[^\W_]"  # a letter or a digit, in any script
SEPARATORS = r"[\s_-]*"
SUFFIX = r"(?:[\s_-]?\d[\w.]*|['’]s|e?s)?"  # Gemma3, Gemma-3, Gemma 3n, Gemma's, Geminis


@lru_cache(maxsize=1024)
def alias_pattern(alias: str) -> re.Pattern | None:
    """The compiled rule for one alias; None for one with no letters or digits (it names nothing)."""
    parts = [re.escape(part) for part in re.split(r"[\s_-]+", alias.strip()) if part]
    if not any(re.search(ALNUM, part) for part in parts):
        return None
    return re.compile(rf"(?<!{ALNUM}){SEPARATORS.join(parts)}{SUFFIX}(?!{ALNUM})", re.IGNORECASE)


def identity_mentions(text: str, aliases: Iterable[str]) -> list[str]:
    """The aliases `text` mentions, each once, in the order given."""
    found: list[str] = []
    for alias in aliases:
        pattern = alias_pattern(alias)
        if pattern is not None and alias not in found and pattern.search(text):
            found.append(alias)
    return found
