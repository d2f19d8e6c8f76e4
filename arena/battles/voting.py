"""When a battle takes a person's verdict, and the words that say why not. Pure: no Django.

A side ends done, stopped ("cancelled": the user pressed Stop, or closed the page) or failed.
A failed side is never judged (the pair was not a fair one); a side still coming is waited
for; a stopped side is judged as it stands in a comparison or an anonymous battle, where
"both are bad" is often why the user stopped, but a stopped tournament match is run again,
since its winner advances. presenting.Shown applies it to what the page shows (a blind side
only once all its paced text is out), the battle socket to what it has sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# Why a battle takes no verdict now (the page shows it under the disabled buttons; the APIs return it).
VOTE_WAIT = ("Both answers must be complete before you vote: wait for them, or press Stop both to judge them "
             "as they are.")
VOTE_FAILED = "An answer failed, so this pair cannot be judged fairly: run it again, or start a new one."
VOTE_STOPPED_MATCH = "This match was stopped: run it again before picking a winner."
# Shown above enabled buttons when a side was stopped: the verdict is on what was written.
VOTE_AFTER_STOP = "Stopped before the end: your verdict is on the answers as far as they got."
STOPPED_VOTE_MODES = frozenset({"comparison", "anonymous"})  # Battle.Mode values


def vote_refusal_for(outcomes: list[str | None], mode: str) -> str:
    """Pure: why a battle whose sides show `outcomes` ("done", "cancelled", "failed", None while
    coming) takes no verdict in `mode` ("" when it does). A stopped side is judged as it stands in
    a comparison or an anonymous battle ("both bad" is often the point of stopping); a stopped
    tournament match is run again, since its winner advances."""
    if "failed" in outcomes:
        return VOTE_FAILED
    if any(o is None for o in outcomes):
        return VOTE_WAIT
    if "cancelled" in outcomes and mode not in STOPPED_VOTE_MODES:
        return VOTE_STOPPED_MATCH
    return ""


# --- a verdict's note: a short comment and reason tags ------------------------------------
# A person's verdict may say why: reason tags from the list staff keep (battles.models.ReasonTag)
# and a comment of at most COMMENT_MAX characters. Shown with the verdict only where the names
# are (a blind item's once it is revealed), in History and in the exports.
COMMENT_MAX = 500
# The reasons offered until staff edit the list (slug, label): the battles migration that made
# ReasonTag stores a frozen copy of these.
DEFAULT_REASONS = (
    ("factual_error", "factual error"), ("too_long", "too long"), ("too_short", "too short"),
    ("ignored_format", "ignored the format"), ("unsafe", "unsafe"), ("off_topic", "off topic"),
    ("better_reasoning", "better reasoning"), ("clearer", "clearer"),
)


@dataclass(frozen=True)
class Note:
    """A verdict's comment and reason slugs, already checked (clean_note): what actions.vote stores."""

    comment: str = ""
    reasons: tuple[str, ...] = ()


class NoteError(ValueError):
    """Why a note is refused: the message (a sentence), the field it is about and the API's code
    for it (arena/api/http.py CODES: "unknown_reason" or "invalid_request")."""

    def __init__(self, message: str, field: str, code: str = "invalid_request"):
        super().__init__(message)
        self.field, self.code = field, code


def clean_note(comment: object, reasons: object, known: Sequence[str]) -> Note:
    """Pure: the note of a vote from what a form or a JSON body gave (None: none), checked
    against `known`, the reason slugs offered now, in their order. Line ends count as one
    character (a browser's textarea sends CRLF); the reasons come back in the list's order,
    each once. Raises NoteError."""
    comment = "" if comment is None else comment
    if not isinstance(comment, str):
        raise NoteError("comment must be a string.", "comment")
    comment = comment.replace("\r\n", "\n").replace("\r", "\n").strip()
    if "\x00" in comment:
        raise NoteError("comment may not contain a NUL character.", "comment")
    if len(comment) > COMMENT_MAX:
        raise NoteError(f"comment is {len(comment)} characters long: at most {COMMENT_MAX}.", "comment")
    reasons = [] if reasons is None else reasons
    if not isinstance(reasons, list | tuple) or not all(isinstance(r, str) for r in reasons):
        raise NoteError("reasons must be a list of reason slugs (strings).", "reasons")
    order = {slug: i for i, slug in enumerate(known)}
    unknown = [r for r in reasons if r not in order]
    if unknown:
        shown = unknown[0] if len(unknown[0]) <= 40 else unknown[0][:40] + "…"
        raise NoteError(f"Unknown reason {shown!r}: the reasons are {', '.join(known) or 'none'}.", "reasons",
                        "unknown_reason")
    return Note(comment, tuple(sorted(set(reasons), key=order.__getitem__)))
