"""When a battle takes a person's verdict, and the words that say why not. Pure: no Django.

A side ends done, stopped ("cancelled": the user pressed Stop, or closed the page) or failed.
A failed side is never judged (the pair was not a fair one); a side still coming is waited
for; a stopped side is judged as it stands in a comparison or an anonymous battle, where
"both are bad" is often why the user stopped, but a stopped tournament match is run again,
since its winner advances. presenting.Shown applies it to what the page shows (a blind side
only once all its paced text is out), the battle socket to what it has sent.
"""

from __future__ import annotations

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
