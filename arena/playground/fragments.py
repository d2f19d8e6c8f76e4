"""HTML fragments pushed over the WebSocket for htmx's ws extension (out-of-band swaps).

Model output is untrusted: every piece of it goes through escaping here, or through
arena.markdown (formatting without HTML). While an answer streams, tokens are appended as
escaped text; the final frame and any finished answer show it as Markdown."""

from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from arena import markdown
from inference import protocol as p
from orchestration.client import ordinal

METRICS_TEMPLATE = "generations/_metrics.html"
STATUS_TEXT = {
    "queued": "Queued",
    "loading": "Loading the model",
    "running": "Generating",
    "done": "Done",
    "failed": "Failed",
    "cancelled": "Stopped",
}


def status(state: str, detail: str = "") -> str:
    label = STATUS_TEXT.get(state, state)
    return format_html(
        '<div id="gen-status" class="status status-{}" data-state="{}">{}{}</div>',
        state, state, label, format_html(" <span class='detail'>{}</span>", detail) if detail else "",
    )


def output_replace(text: str, n: int | None = None, rendered: bool = False) -> str:
    """The whole output; `n` (the replay's last token index) lets a client tell replayed tokens from live ones.
    A finished answer is `rendered` as Markdown; until then plain text, which streamed tokens append to."""
    if rendered:
        return format_html('<div id="gen-output" class="output markdown">{}</div>', markdown.render(text))
    if n is None:
        return format_html('<div id="gen-output" class="output">{}</div>', text)
    return format_html('<div id="gen-output" class="output" data-n="{}">{}</div>', n, text)


def output_append(text: str, n: int) -> str:
    """One token's text; `data-n` is its index, so a client can check nothing was lost or repeated (bench/load.py)."""
    return format_html('<div id="gen-output" hx-swap-oob="beforeend" data-n="{}">{}</div>', n, text)


def metrics(values: dict, element_id: str = "gen-metrics", chart: str = "", hidden: bool = False) -> str:
    """Time to first token, tokens/s and token count ("–" until known), in the one metrics
    partial that pages render too; `chart` and `hidden` are a battle side's (arena/battles/fragments.py)."""
    context = {"id": element_id, "chart": chart, "hidden": hidden,
               **{name: values.get(name) for name in ("ttft_s", "tokens_per_s", "tokens")}}
    return render_to_string(METRICS_TEMPLATE, context).strip()


def controls(live: bool) -> str:
    if not live:
        return '<div id="gen-controls"></div>'
    return (
        '<div id="gen-controls"><form ws-send><input type="hidden" name="action" value="stop">'
        '<button type="submit" class="stop">Stop</button></form></div>'
    )


def error(message: str) -> str:
    return format_html('<div id="gen-notice" class="notice">{}</div>', message)


def for_event(ev: dict, created_at: float) -> str:
    """The fragment(s) one stream event turns into, in the page."""
    kind = ev["type"]
    if kind == p.TOKEN:
        return output_append(ev.get("text", ""), ev.get("n", 0))
    if kind == p.QUEUED:
        return status("queued", place_in_line(ev))
    if kind == p.LOADING:
        progress = f" — {ev['progress']}" if ev.get("progress") else ""
        return status("loading", f"{ev.get('model', '')} — {ev.get('elapsed_s', 0):.0f} s{progress}")
    if kind == p.STARTED:
        return status("running")
    if kind in p.TERMINAL_EVENTS:
        return final(ev, created_at)
    return ""


def place_in_line(ev: dict) -> str:
    """A QUEUED event's detail: "3rd in line of 7 — 12 s" (arena/generations/admission.py)."""
    return f"{in_line(int(ev.get('position') or 1), ev.get('waiting', '?'))} — {ev.get('elapsed_s', 0):.0f} s"


def in_line(position: int, waiting) -> str:
    """"2nd in line of 5"."""
    return f"{ordinal(position)} in line of {waiting}"


def final(ev: dict, created_at: float) -> str:
    kind = ev["type"]
    m = ev.get("metrics") or {}
    ttft = m.get("first_token_time")
    values = {
        "ttft_s": (ttft - created_at) if ttft else None,
        "tokens_per_s": m.get("decode_tokens_per_s"),
        "tokens": m.get("generated_tokens"),
    }
    state = {p.DONE: "done", p.FAILED: "failed", p.CANCELLED: "cancelled"}[kind]
    parts = [status(state, ev.get("reason", "")), metrics(values), controls(False)]
    if kind in (p.DONE, p.CANCELLED) and "text" in ev:
        parts.append(output_replace(ev["text"], rendered=True))
    return "".join(parts)


def validity(params: dict, verdict: bool | None) -> str:
    """Whether the answer follows its JSON schema or regex (empty without one), swapped in by its id."""
    inner = render_to_string("generations/_validity.html", {"gen": {"params": params, "output_valid": verdict}})
    return format_html('<div id="gen-validity">{}</div>', mark_safe(inner.strip()))  # the template escaped it


def stored(gen) -> str:
    """A generation as the database has it: the page's first render, or a late viewer's."""
    values = {"ttft_s": gen.time_to_first_token_s, "tokens_per_s": gen.tokens_per_s, "tokens": gen.generated_tokens}
    return (
        status(gen.status, gen.failure_reason)
        + output_replace(gen.text, rendered=gen.finished)
        + metrics(values)
        + controls(not gen.finished)
        + '<div id="gen-notice"></div>'
    )
