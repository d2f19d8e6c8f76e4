"""HTML fragments for a battle's two sides, pushed over its WebSocket (htmx out-of-band swaps).

Model output is untrusted: every piece of it goes through escaping here, or through
arena.markdown once an answer is finished (tokens stream in as escaped text). A blind battle's
fragments carry no speeds and no failure details (either could tell the contestants apart)."""

from __future__ import annotations

import math

from django.utils.html import format_html, format_html_join

from arena import markdown
from arena.generations import places
from arena.generations import status as status_line
from arena.playground import fragments as playground
from inference import protocol as p

from .voting import VOTE_AFTER_STOP

BLIND_FAILURE = "This answer failed. Run the match again."
# A side's tokens-over-time chart: the plot inside margins for the tick labels and axis titles.
CHART_W, CHART_H = 240, 120
PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 38, 232, 6, 90
CHART_X_TITLE, CHART_Y_TITLE = "Seconds since the battle began", "Tokens"


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
    """Tokens over time as a small inline SVG (no script, no library), on titled axes with round
    ticks: seconds since the battle began across, tokens so far up (each side's own scale, its
    ticks say which)."""
    if len(points) < 2:
        return format_html('<svg class="chart" width="{}" height="{}" aria-hidden="true"></svg>', CHART_W, CHART_H)
    t_max = max(t for t, _ in points) or 1.0
    n_max = max(n for _, n in points) or 1
    t_ticks, n_ticks = round_ticks(t_max), round_ticks(n_max)
    t_top, n_top = max(t_max, t_ticks[-1]), max(n_max, n_ticks[-1])

    def x(t: float) -> float:
        return round(PLOT_LEFT + t / t_top * (PLOT_RIGHT - PLOT_LEFT), 1)

    def y(n: float) -> float:
        return round(PLOT_BOTTOM - n / n_top * (PLOT_BOTTOM - PLOT_TOP), 1)

    step = max(1, len(points) // 120)  # a bounded number of vertices, however long the answer
    coords = format_html_join(" ", "{},{}", ((x(t), y(n)) for t, n in points[::step] + points[-1:]))
    x_marks = format_html_join("", (
        '<line x1="{0}" x2="{0}" y1="{1}" y2="{2}" stroke="currentColor"/>'
        '<text class="tick" x="{0}" y="{3}" text-anchor="middle">{4}</text>'),
        ((x(v), PLOT_BOTTOM, PLOT_BOTTOM + 3, PLOT_BOTTOM + 13, f"{v:g}") for v in t_ticks))
    y_marks = format_html_join("", (
        '<line x1="{0}" x2="{1}" y1="{2}" y2="{2}" stroke="currentColor"/>'
        '<text class="tick" x="{3}" y="{2}" dy="3" text-anchor="end">{4}</text>'),
        ((PLOT_LEFT - 3, PLOT_LEFT, y(v), PLOT_LEFT - 5, f"{v:g}") for v in n_ticks))
    return format_html(
        '<svg class="chart speed-chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-size="10" role="img" '
        'aria-label="{n} tokens in {t} s">'
        '<line x1="{l}" x2="{r}" y1="{b}" y2="{b}" stroke="currentColor"/>'
        '<line x1="{l}" x2="{l}" y1="{top}" y2="{b}" stroke="currentColor"/>{xm}{ym}'
        '<text class="axis-title" x="{mid}" y="{h}" dy="-3" text-anchor="middle">{x_title}</text>'
        '<text class="axis-title" transform="rotate(-90)" x="-{ymid}" y="10" text-anchor="middle">{y_title}</text>'
        '<polyline fill="none" stroke="currentColor" stroke-width="1.5" points="{coords}"/></svg>',
        w=CHART_W, h=CHART_H, n=n_max, t=f"{t_max:.1f}", l=PLOT_LEFT, r=PLOT_RIGHT, b=PLOT_BOTTOM, top=PLOT_TOP,
        xm=x_marks, ym=y_marks, mid=(PLOT_LEFT + PLOT_RIGHT) / 2, ymid=(PLOT_TOP + PLOT_BOTTOM) / 2,
        x_title=CHART_X_TITLE, y_title=CHART_Y_TITLE, coords=coords,
    )


def round_ticks(high: float, count: int = 3) -> list[float]:
    """0 and about `count` round values (1, 2 or 5 times a power of ten apart) up to the first at
    or past `high`, so the axis ends on a labelled value."""
    raw = max(high, 1e-9) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [round(i * step, 10) for i in range(math.ceil(high / step - 1e-9) + 1)]


def for_event(view: Side, ev: dict) -> str:
    kind = ev["type"]
    if kind == p.TOKEN:
        return output_append(view.name, ev.get("text", ""))
    if kind == p.QUEUED:
        return status(view.name, "queued", places.of_event(ev))
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
        return status(side, "queued", places.in_line(*view.place))
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
    # A blind failure's own words could tell the contestants apart; a stopped side's (the page was
    # closed) are the same for both, whichever they are.
    reason = BLIND_FAILURE if view.blind and gen.failure_reason and gen.status == "failed" else gen.failure_reason
    return (status_line.of(gen, f"{view.name}-status", reason, blind=view.blind)
            + output_replace(view.name, gen.text, rendered=gen.finished) + metrics(view))


def validity(side: str, params: dict, verdict: bool | None) -> str:
    """Whether a side's answer follows its JSON schema or regex (empty without one), by its id."""
    return playground.validity(params, verdict, f"{side}-validity")


# Sent once both answers have ended: nothing is left to stop (its place stays, empty).
STOP_GONE = '<div id="battle-stop" hidden></div>'


# The vote buttons' words: beside each other the answers sit left and right; stacked (a narrow
# screen, arena.css's 760px break) the left one is on top, so the words say which by its label.
VOTES = (("left", "← Left is better", "↑ {} is better"), ("tie", "Tie", "Tie"),
         ("both_bad", "Both are bad", "Both are bad"), ("right", "Right is better →", "↓ {} is better"))
STACKED_LABELS = {True: ("Model A", "Model B"), False: ("Top answer", "Bottom answer")}  # blind or not


def verdict_open(refusal: str = "", *, blind: bool = False, stopped: bool = False, error: str = "") -> str:
    """The vote buttons: enabled when `refusal` is "" (both answers are in), else disabled with
    the reason under them; `stopped`: a side was stopped, the verdict is on what was written;
    `error`: a vote just refused, said in its place as an alert. Each button holds its words for
    both layouts (CSS shows one: no JavaScript)."""
    disabled = " disabled" if refusal else ""
    top, bottom = STACKED_LABELS[blind]
    buttons = format_html_join("", (
        '<button type="submit" name="outcome" value="{}"{}><span class="when-side-by-side">{}</span>'
        '<span class="when-stacked">{}</span></button>'), (
        (value, disabled, wide, stacked.format(top if value == "left" else bottom))
        for value, wide, stacked in VOTES))
    note = error or refusal or (VOTE_AFTER_STOP if stopped else "")
    shown = format_html('<p class="{} vote-note" id="vote-note"{}>{}</p>', "error" if error else "hint",
                        ' role="alert"' if error else "", note) if note else ""
    return format_html('<fieldset id="vote-buttons" class="vote-buttons">{}{}</fieldset>', buttons, shown)
