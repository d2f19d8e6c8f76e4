"""Looking for a figure (a speed, a count) or a short word in a body without matching it by
chance inside a timestamp ("19:25:12.554910" holds "12.5"), an id or a hex digest ("…a500f…"
holds "500"), or a random token (a CSRF token of 64 letters and digits holds "AWQ" about once
in 4000 pages)."""

import re


def shows_figure(text: str, figure: str) -> bool:
    """Whether `figure` appears as a figure of its own: not part of a longer number, word or time."""
    return re.search(rf"(?<![\w.:-]){re.escape(figure)}(?![\w]|\.\d)", text) is not None


def shows_word(text: str, word: str) -> bool:
    """Whether `word` appears as a word of its own (in a slug too: "smollm2-135m-awq" shows "awq"),
    not inside a longer run of letters and digits."""
    return re.search(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", text) is not None
