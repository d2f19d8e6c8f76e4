"""What a generation's status line says: one wording for every page, socket fragment and list.

An answer that ended is one of five outcomes, and each reads differently, so an answer cut at
max_new_tokens never looks like one that finished: done (the model ended it), cut at the token
limit, cut at a stop sequence, stopped by the user, failed (with its reason). `data-state` keeps
the generation's status ("done" for the three ways of finishing), which pages and tests wait for;
`data-finish` says which of them it was.
"""

from __future__ import annotations

from django.utils.html import format_html

LIVE = {"queued": "Queued", "loading": "Loading the model", "running": "Generating"}
DONE = "Done"
CUT_AT = "Stopped at {n} tokens"  # the limit it was given (max_new_tokens)
CUT_CONTEXT_FULL = "Stopped at {n} tokens: the model's context was full"
CUT_NO_COUNT = "Stopped at the token limit"  # blind (each model counts tokens its own way), or no count known
STOP_SEQUENCE = "Stopped at a stop sequence"
STOPPED_BY_USER = "Stopped by the user"
# A web answer whose every viewer left (arena/generations/run.py `check_abandoned`): nobody pressed
# Stop, so it must not read as the user's doing. Stored as the cancelled row's failure_reason.
PAGE_CLOSED = "Stopped: the page was closed before the answer finished"
ABANDONED = "abandoned"  # the cancel key's reason when every viewer left (services.cancel)
FAILED = "Failed"

# A finished answer's outcome, from its status and its finish_reason (inference/protocol.py DONE).
LENGTH, STOP_SEQ = "length", "stop_sequence"

# finish_reason as the APIs and exports give it (the OpenAI-compatible API says "stop" for stop_sequence).
FINISH_REASON_SCHEMA = {
    "type": "string", "enum": ["", "stop", "length", "stop_sequence", "cancelled"],
    "description": "How the answer ended: stop (the model ended it), length (cut at params.max_new_tokens, or a "
                   "full context), stop_sequence (cut before one of params.stop; answers from before this was told "
                   "apart say stop), cancelled (stopped by the user, or every viewer of a web answer left: then "
                   "failure_reason is \"" + PAGE_CLOSED + "\"); empty while it runs or when it failed "
                   "(failure_reason says why)",
}


def outcome(status: str, finish_reason: str = "") -> str:
    """"done", "length", "stop_sequence", "cancelled", "failed", or the live status."""
    if status == "done" and finish_reason in (LENGTH, STOP_SEQ):
        return finish_reason
    return status


def cancel_reason(why: str) -> str:
    """What a cancelled row stores as its reason, from the cancel key's `why`: the page closing
    says so; a Stop (or any other cancel) stores none and reads "Stopped by the user"."""
    return PAGE_CLOSED if why == ABANDONED else ""


def text(status: str, finish_reason: str = "", *, tokens: int | None = None, limit: int | None = None,
         blind: bool = False, reason: str = "") -> str:
    """The status line's words. `tokens`: how many the answer has; `limit`: its max_new_tokens;
    `reason`: its stored failure_reason (a cancelled one says whether the page was closed)."""
    kind = outcome(status, finish_reason)
    if kind == LENGTH:
        if blind:
            return CUT_NO_COUNT
        if limit and tokens is not None and tokens < limit:
            return CUT_CONTEXT_FULL.format(n=tokens)
        n = limit or tokens
        return CUT_AT.format(n=n) if n else CUT_NO_COUNT
    if kind == STOP_SEQ:
        return STOP_SEQUENCE
    if kind == "cancelled":
        return PAGE_CLOSED if reason == PAGE_CLOSED else STOPPED_BY_USER
    if kind == "failed":
        return FAILED
    if kind == "done":
        return DONE
    return LIVE.get(status, status)


def html(element_id: str, status: str, detail: str = "", *, finish_reason: str = "", tokens: int | None = None,
         limit: int | None = None, blind: bool = False) -> str:
    """The status line as a <div> (its `id` lets a socket's fragment replace it; "" for none)."""
    kind = outcome(status, finish_reason)
    finish = format_html(' data-finish="{}"', kind) if status in ("done", "failed", "cancelled") else ""
    words = text(status, finish_reason, tokens=tokens, limit=limit, blind=blind, reason=detail)
    if kind == "cancelled" and detail == PAGE_CLOSED:
        detail = ""  # the words say it already
    return format_html(
        '<div{} class="status status-{}{}" data-state="{}"{}>{}{}</div>',
        format_html(' id="{}"', element_id) if element_id else "", status,
        " status-cut" if kind in (LENGTH, STOP_SEQ) else "", status, finish, words,
        format_html(" <span class='detail'>{}</span>", detail) if detail else "",
    )


def of(gen, element_id: str = "", detail: str | None = None, blind: bool = False) -> str:
    """A stored generation's status line (its failure reason as the detail unless one is given)."""
    return html(element_id, gen.status, gen.failure_reason if detail is None else detail,
                finish_reason=gen.finish_reason, tokens=gen.generated_tokens,
                limit=(gen.params or {}).get("max_new_tokens"), blind=blind)


def of_event(element_id: str, ev: dict, detail: str = "", *, limit: int | None = None, blind: bool = False) -> str:
    """The status line a terminal stream event (DONE, FAILED, CANCELLED) turns into."""
    from inference import protocol as p

    status = {p.DONE: "done", p.FAILED: "failed", p.CANCELLED: "cancelled"}[ev["type"]]
    tokens = (ev.get("metrics") or {}).get("generated_tokens")
    return html(element_id, status, detail, finish_reason=ev.get("finish_reason", ""), tokens=tokens, limit=limit,
                blind=blind)
