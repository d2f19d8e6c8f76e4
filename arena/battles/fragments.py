"""HTML fragments for a battle's two sides, pushed over its WebSocket (htmx out-of-band swaps).

Model output is untrusted: every piece of it goes through escaping here, or through
arena.markdown once an answer is finished (tokens stream in as escaped text). A blind battle's
fragments carry no speeds and no failure details (either could tell the contestants apart)."""

from __future__ import annotations

from django.utils.html import format_html, format_html_join

from arena import markdown
from arena.generations import status as status_line
from arena.playground import fragments as playground
from arena.playground.fragments import in_line, place_in_line
from inference import protocol as p

BLIND_FAILURE = "This answer failed. Run the match again."
CHART_W, CHART_H = 160, 36


class Side:
    """What one side's page shows, kept up to date from its stream's events."""

    def __init__(self, name: str, created_at: float, blind: bool):
        self.name, self.created_at, self.blind = name, created_at, blind
        self.started_at: float | None = None  # when its worker began the answer (its STARTED event)
        self.first_token_at: float | None = None
        self.last_token_at: float | None = None
        self.tokens = 0
        self.points: list[tuple[float, int]] = []  # (seconds since start, tokens so far)
        self.final: dict | None = None  # the terminal event's metrics, once there
        self.waits: dict = {}  # a stored side's wait for its worker and in line (playground.waits)
        self.state = "queued"  # the last status shown: done / failed / cancelled once finished

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed", "cancelled")

    def token(self, ev: dict) -> None:
        self.first_token_at = self.first_token_at or ev["t"]
        self.last_token_at = ev["t"]
        self.tokens = int(ev.get("n") or self.tokens + 1)
        self.points.append((ev["t"] - self.created_at, self.tokens))

    def values(self) -> dict:
        metrics = self.final or {}
        # From when its worker began (neither the wait in line nor the model's load); the terminal
        # event's own figure once there, else its STARTED event to its first token.
        ttft = p.time_to_first_token(metrics)
        if ttft is None and self.first_token_at and self.started_at:
            ttft = max(0.0, self.first_token_at - self.started_at)
        rate = metrics.get("decode_tokens_per_s")
        if (rate is None and self.tokens > 1 and self.last_token_at and self.first_token_at is not None
                and self.last_token_at > self.first_token_at):
            rate = (self.tokens - 1) / (self.last_token_at - self.first_token_at)
        return {"ttft_s": ttft, "tokens_per_s": rate, "tokens": metrics.get("generated_tokens") or self.tokens or None,
                **self.waits}


def status(side: str, state: str, detail: str = "") -> str:
    """A live status line; an ended one says how it ended (arena/generations/status.py)."""
    return status_line.html(f"{side}-status", state, detail)


def output_replace(side: str, text: str, rendered: bool = False) -> str:
    """A side's whole answer: Markdown once finished (`rendered`), else plain text the tokens append to."""
    if rendered:
        return format_html('<div id="{}-output" class="output markdown">{}</div>', side, markdown.render(text))
    return format_html('<div id="{}-output" class="output">{}</div>', side, text)


def output_append(side: str, text: str) -> str:
    return format_html('<div id="{}-output" hx-swap-oob="beforeend">{}</div>', side, text)


def metrics(view: Side) -> str:
    """Time to first token, live tokens/s, token count and a chart of tokens over time; none of it while blind."""
    if view.blind:
        return playground.metrics({}, f"{view.name}-metrics", hidden=True)
    # A side read back from the database has no token times: no chart rather than an empty box.
    drawn = chart(view.points) if view.points or not view.finished else ""
    return playground.metrics(view.values(), f"{view.name}-metrics", chart=drawn)


def chart(points: list[tuple[float, int]]) -> str:
    """Tokens over time as a small inline SVG line (no script, no library)."""
    if len(points) < 2:
        return format_html('<svg class="chart" width="{}" height="{}" aria-hidden="true"></svg>', CHART_W, CHART_H)
    t_max = max(t for t, _ in points) or 1.0
    n_max = max(n for _, n in points) or 1
    step = max(1, len(points) // 120)  # a bounded number of vertices, however long the answer
    coords = format_html_join(" ", "{},{}", (
        (round(t / t_max * CHART_W, 1), round(CHART_H - n / n_max * CHART_H, 1))
        for t, n in points[::step] + points[-1:]
    ))
    return format_html(
        '<svg class="chart" width="{}" height="{}" viewBox="0 0 {} {}" role="img" '
        'aria-label="{} tokens in {} s"><polyline fill="none" stroke="currentColor" points="{}"/></svg>',
        CHART_W, CHART_H, CHART_W, CHART_H, n_max, f"{t_max:.1f}", coords,
    )


def for_event(view: Side, ev: dict) -> str:
    kind = ev["type"]
    if kind == p.TOKEN:
        return output_append(view.name, ev.get("text", ""))
    if kind == p.QUEUED:
        return status(view.name, "queued", place_in_line(ev))
    if kind == p.LOADING:
        detail = f"{ev.get('elapsed_s', 0):.0f} s"
        if ev.get("progress") and not view.blind:
            detail += f" — {ev['progress']}"
        return status(view.name, "loading", detail)
    if kind == p.STARTED:
        view.started_at = ev["t"]
        return status(view.name, "running")
    if kind in p.TERMINAL_EVENTS:
        return final(view, ev)
    return ""


def final(view: Side, ev: dict) -> str:
    kind = ev["type"]
    view.final = ev.get("metrics") or {}
    view.state = {p.DONE: "done", p.FAILED: "failed", p.CANCELLED: "cancelled"}[kind]
    reason = ev.get("reason", "")
    if view.blind and reason:
        reason = BLIND_FAILURE
    parts = [status_line.of_event(f"{view.name}-status", ev, reason, blind=view.blind), metrics(view)]
    if kind in (p.DONE, p.CANCELLED) and "text" in ev:
        parts.append(output_replace(view.name, ev["text"], rendered=True))
    return "".join(parts)


# --- a paced (blind) battle: frames from what `Pacer` shows, never from raw events --------
def paced_frame(sides: list[Side], before: list | None, now: list) -> str:
    """One frame for both sides: what changed between two `SideView`s of each (all of it
    when there was no `before`: a snapshot)."""
    parts = []
    for i, (side, view) in enumerate(zip(sides, now, strict=True)):
        prev = before[i] if before else None
        side.state = view.state
        if prev is None:
            parts += [paced_status(side.name, view), _paced_output(side.name, view), metrics(side)]
            continue
        if view.text != prev.text and view.text.startswith(prev.text):
            parts.append(output_append(side.name, view.text[len(prev.text):]))
        elif view.text != prev.text:  # a headless stream's whole answer replaced its tail (pacing.SideFeed)
            parts.append(output_replace(side.name, view.text))
        if view.state != prev.state or view.place != prev.place:
            parts.append(paced_status(side.name, view))
            if view.ended:
                parts.append(_paced_output(side.name, view))
    return "".join(parts)


def paced_status(side: str, view) -> str:
    """A paced side's status: "Preparing" with no seconds (how long a model takes to load
    would tell it apart), and a failure without its reason."""
    if view.state == "loading":
        return format_html('<div id="{}-status" class="status status-loading" data-state="loading">Preparing</div>',
                           side)
    if view.state == "queued" and view.place:  # a battle waits as one: both sides stand in the same place
        return status(side, "queued", in_line(*view.place))
    ended = view.end_event if view.state in ("done", "failed", "cancelled") else None
    if ended is not None:  # how it ended, once its paced text is out; a cut is no clue to who answered
        return status_line.of_event(f"{side}-status", ended, BLIND_FAILURE if view.state == "failed" else "",
                                    blind=True)
    return status(side, view.state, BLIND_FAILURE if view.state == "failed" else "")


def _paced_output(side: str, view) -> str:
    """The text shown so far; as Markdown once it is finished (a failed answer stays plain)."""
    return output_replace(side, view.text, rendered=view.state in ("done", "cancelled"))


def stored(view: Side, gen) -> str:
    """A side as the database has it (the stream expired)."""
    view.state = gen.status
    view.final = {"decode_tokens_per_s": gen.tokens_per_s, "generated_tokens": gen.generated_tokens}
    if gen.time_to_first_token_s is not None:
        view.started_at = view.created_at
        view.first_token_at = view.created_at + gen.time_to_first_token_s
    view.waits = playground.waits(gen)
    reason = BLIND_FAILURE if view.blind and gen.failure_reason else gen.failure_reason
    return (status_line.of(gen, f"{view.name}-status", reason, blind=view.blind)
            + output_replace(view.name, gen.text, rendered=gen.finished) + metrics(view))


def validity(side: str, params: dict, verdict: bool | None) -> str:
    """Whether a side's answer follows its JSON schema or regex (empty without one), by its id."""
    return playground.validity(params, verdict, f"{side}-validity")


# Sent once both answers have ended: nothing is left to stop (its place stays, empty).
STOP_GONE = '<div id="battle-stop" hidden></div>'


def verdict_open(open_: bool) -> str:
    """The vote buttons, enabled once both answers are in."""
    disabled = "" if open_ else " disabled"
    buttons = format_html_join("", '<button type="submit" name="outcome" value="{}"{}>{}</button>', (
        (value, disabled, label) for value, label in (
            ("left", "← Left is better"), ("tie", "Tie"), ("both_bad", "Both are bad"), ("right", "Right is better →"),
        )
    ))
    return format_html('<fieldset id="vote-buttons" class="vote-buttons">{}</fieldset>', buttons)
