"""HTML fragments pushed over the WebSocket for htmx's ws extension (out-of-band swaps).

Model output is untrusted: every piece of it goes through escaping here, or through
arena.markdown (formatting without HTML). While an answer streams, tokens are appended as
escaped text; the final frame and any finished answer show it as Markdown."""

from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from arena import markdown
from arena.generations import places, readiness
from arena.generations import status as status_line
from inference import protocol as p

METRICS_TEMPLATE = "generations/_metrics.html"


def status(state: str, detail: str = "") -> str:
    """A live status line ("Queued", "Generating"...); an ended one comes from `final` or `stored`."""
    return status_line.html("gen-status", state, detail)


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
               **{name: values.get(name) for name in ("ttft_s", "tokens_per_s", "tokens", "load_s", "queue_s",
                                                      "shared")},
               "withheld": readiness.WITHHELD if values.get("withheld") else ""}
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
        return status("queued", places.of_event(ev))
    if kind == p.LOADING:
        progress = f" — {ev['progress']}" if ev.get("progress") else ""
        return status("loading", f"{ev.get('model', '')} — {ev.get('elapsed_s', 0):.0f} s{progress}")
    if kind == p.STARTED:
        return status("running")
    if kind in p.TERMINAL_EVENTS:
        return final(ev, created_at)
    return ""


def final(ev: dict, created_at: float, gen=None) -> str:
    """A terminal event's status line, metrics and answer. `gen`, as stored when the event came (its
    parameters and the wait in line and for the model, which the Django side records), where known."""
    kind = ev["type"]
    m = ev.get("metrics") or {}
    values = {
        "ttft_s": p.time_to_first_token(m),
        "tokens_per_s": m.get("decode_tokens_per_s"),
        "tokens": m.get("generated_tokens"),
        "shared": p.shared_with(m),
        **(waits(gen, m) if gen is not None else {}),
    }
    limit = (gen.params or {}).get("max_new_tokens") if gen is not None else None
    parts = [status_line.of_event("gen-status", ev, ev.get("reason", ""), limit=limit), metrics(values),
             controls(False)]
    if kind in (p.DONE, p.CANCELLED) and "text" in ev:
        parts.append(output_replace(ev["text"], rendered=True))
    return "".join(parts)


def ending(ev: dict, params: dict) -> dict:
    """How a terminal event `ev` ends its generation (the run may not have stored it yet), as the status
    line's filters read it (arena/generations/templatetags/generation_tags.py)."""
    return {"status": {p.DONE: "done", p.FAILED: "failed", p.CANCELLED: "cancelled"}[ev["type"]],
            "finish_reason": ev.get("finish_reason", ""), "params": params,
            "generated_tokens": (ev.get("metrics") or {}).get("generated_tokens")}


def recent_entry(gen) -> dict:
    """What the playground's recent list shows of `gen` (its model loaded), as its socket keeps it
    up to date (`ending` tells how it ended)."""
    return {"id": gen.id, "prompt": gen.prompt, "model": {"name": gen.model.name}, "status": gen.status,
            "finish_reason": gen.finish_reason, "params": gen.params, "generated_tokens": gen.generated_tokens,
            "get_absolute_url": gen.get_absolute_url()}


def recent_item(entry: dict) -> str:
    """The playground's recent-list line of a `recent_entry`, swapped in by its id."""
    return render_to_string("playground/_recent.html#recent-item", {"g": entry, "item_oob": True}).strip()


def validity(params: dict, verdict: bool | None, element_id: str = "gen-validity") -> str:
    """Whether the answer follows its JSON schema or regex (empty without one), swapped in by its id."""
    inner = render_to_string("generations/_validity.html", {"gen": {"params": params, "output_valid": verdict}})
    return format_html('<div id="{}">{}</div>', element_id, mark_safe(inner.strip()))  # the template escaped it


def waits(gen, metrics: dict | None = None) -> dict:
    """The wait for the model's worker and in line, apart from the time to first token: as stored, or
    (an answer ending now, not yet stored) from its admission and its terminal event's metrics."""
    if gen.readiness_withheld():  # a blind verdict of its owner's is pending (arena/generations/readiness.py)
        return {"load_s": None, "queue_s": None, "withheld": True}
    queue = gen.queue_wait_s
    if queue is None and metrics is not None and gen.admitted_at is not None:
        queue = gen.queue_wait(metrics)
    return {"load_s": gen.load_wait_s, "queue_s": queue}


def stored_values(gen) -> dict:
    """A stored generation's figures, as `metrics` shows them."""
    return {"ttft_s": gen.time_to_first_token_s, "tokens_per_s": gen.tokens_per_s, "tokens": gen.generated_tokens,
            "shared": p.shared_with(gen.metrics or {}), **waits(gen)}


def stored(gen, *, stoppable: bool = True) -> str:
    """A generation as the database has it: the page's first render, or a late viewer's.
    `stoppable`: False for a viewer who may not stop it (a teammate: arena/access.py may_change)."""
    values = stored_values(gen)
    return (
        status_line.of(gen, "gen-status")
        + output_replace(gen.text, rendered=gen.finished)
        + metrics(values)
        + controls(stoppable and not gen.finished)
        + '<div id="gen-notice"></div>'
    )
