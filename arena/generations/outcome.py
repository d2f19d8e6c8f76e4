"""What the database stored for a generation whose Redis Stream is gone.

A generation's stream expires (STREAM_TTL_S after its last entry) or may never have been
written; the database row is then the only record of how it ended. Everyone who follows a
stream asks here, one way: `stored` (the row, if it has finished) and `terminal_event` (that
row as the terminal event its stream ended with). The WebSockets (consumers.py) render the
row as their pages do; the OpenAI-compatible API and the sockets' JSON format send the event.
"""

from __future__ import annotations

from channels.db import database_sync_to_async

from inference import protocol as p

from .models import Generation


def stored(generation_id) -> Generation | None:
    """The generation as the database has it now (its model loaded) if it has finished; None while
    it runs, or once deleted."""
    gen = Generation.objects.select_related("model").filter(id=generation_id).first()
    if gen is None or not gen.finished:
        return None
    gen.readiness_withheld()  # read here, in a thread: async renderers of its figures ask it again
    return gen


# For async callers (a socket, a streaming response): the ORM in a thread, stale connections closed first.
astored = database_sync_to_async(stored)


def terminal_event(gen: Generation, event: dict | None = None) -> dict:
    """A finished generation's outcome as the database has it, in the shape of a terminal event (the
    database is what the API and the history show); `event`, the stream's own terminal event where
    there was one, only adds a failure's code."""
    if gen.status == Generation.Status.DONE:
        return {"type": p.DONE, "text": gen.text, "finish_reason": gen.finish_reason,
                "metrics": {"prompt_tokens": gen.prompt_tokens, "generated_tokens": gen.generated_tokens}}
    if gen.status == Generation.Status.CANCELLED:
        return {"type": p.CANCELLED, "text": gen.text}
    code = event.get("code") if event and event["type"] == p.FAILED else None
    return {"type": p.FAILED, "reason": gen.failure_reason, "code": code}
