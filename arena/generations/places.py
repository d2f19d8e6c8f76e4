"""A place in the fair line, as users read it: the one place figure a waiting generation is told.

The fair line (admission.py) alone decides who goes next; each pass tells every waiting run its
place (a QUEUED event with `position`, 1 for next, and `waiting`, the line's length), and the
pages, sockets and API say it in these words. Nothing else tells a place: the orchestrator serves
what the line admits in turn, and a worker never refuses a job as busy.
"""

from __future__ import annotations


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def in_line(position: int, waiting) -> str:
    """"2nd in line of 5"."""
    return f"{ordinal(position)} in line of {waiting}"


def of_event(ev: dict) -> str:
    """A QUEUED event's detail: "3rd in line of 7 — 12 s"."""
    return f"{in_line(int(ev.get('position') or 1), ev.get('waiting', '?'))} — {ev.get('elapsed_s', 0):.0f} s"
