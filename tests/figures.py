"""Looking for a figure (a speed, a count) in a body without matching it by chance inside a
timestamp ("19:25:12.554910" holds "12.5"), an id or a hex digest ("…a500f…" holds "500")."""

import re


def shows_figure(text: str, figure: str) -> bool:
    """Whether `figure` appears as a figure of its own: not part of a longer number, word or time."""
    return re.search(rf"(?<![\w.:-]){re.escape(figure)}(?![\w]|\.\d)", text) is not None
