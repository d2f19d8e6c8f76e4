from urllib.parse import urlencode

from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from arena.history.models import NEW_LINKS, ShareLink, noun
from arena.playground import fragments

register = template.Library()


@register.inclusion_tag("history/_share_panel.html", takes_context=True)
def share_panel(context, obj):
    """The owner's share control on a permalink page: create, copy, revoke. Nothing for anyone else."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if obj is None or user is None or not user.is_authenticated or obj.owner_id != user.id:
        return {"show": False}
    link = ShareLink.objects.active().for_object(obj).first()
    url = ""
    if link is not None and (token := _new_link_token(request, link)):
        link.token = token
        url = request.build_absolute_uri(link.get_absolute_url())
    return {
        "show": True,
        "kind": ShareLink.kind_of(obj),
        "noun": noun(obj),
        "object": obj,
        "link": link,
        "url": url,  # the full link: only right after it was made (only a digest is stored)
        "blind": _blind(obj),
        "csrf_token": context.get("csrf_token"),
    }


def _new_link_token(request, link) -> str:
    """The token of a link the owner has just made, taken from their session (shown once)."""
    session = getattr(request, "session", None)
    if session is None:
        return ""
    waiting = session.get(NEW_LINKS)
    if not waiting or str(link.id) not in waiting:
        return ""
    token = waiting.pop(str(link.id))
    session[NEW_LINKS] = waiting  # re-set: the session saves the change
    return token


def _blind(obj) -> bool:
    """Whether the shared page shows neutral labels (names come at the reveal)."""
    if hasattr(obj, "names_visible"):
        return not obj.names_visible
    if hasattr(obj, "revealed"):
        return not obj.revealed
    return False


@register.simple_tag
def shared_generation(gen):
    """A generation's status, answer and metrics as stored: the permalink's panel without its Stop control."""
    from arena.generations import status as status_line

    return mark_safe(status_line.of(gen, "gen-status") + fragments.output_replace(gen.text, rendered=True)
                     + fragments.metrics(fragments.stored_values(gen)))


@register.simple_tag
def query(filters, **extra):
    """The filters (none on a page without them) and e.g. page=2 as a query string, starting with '?', or ''."""
    params = {**(filters.as_query() if filters else {}), **{k: v for k, v in extra.items() if v not in (None, "")}}
    return "?" + urlencode(params) if params else ""


@register.simple_tag
def scope_query(filters, scope: str):
    """The switch's link (and Clear's): the filters (none: `filters` None) with `scope` instead of theirs."""
    params = {k: v for k, v in (filters.as_query() if filters else {}).items() if k != "scope"}
    if scope == "team":
        params["scope"] = "team"
    return "?" + urlencode(params) if params else ""


@register.simple_tag
def owner_cell(obj, user):
    """Whose a row of "My team's" is: "you", or the teammate's name and that it opens read-only."""
    if obj.owner_id == user.id:
        return "you"
    return format_html('{} <span class="hint">(read-only)</span>', obj.owner.get_username())


@register.inclusion_tag("history/_side.html")
def shared_side(shown, side: str, heading: str = "h2", thread: bool = False):
    """One side of a battle on a shared page, as its owner's page shows it: while the battle
    is blind, a neutral label, no system prompt, parameters or speeds, and no failure detail.
    `thread`: with the side's own earlier turns above its answer (a comparison's follow-up).
    `shown`: what the battle shows now (arena/battles/presenting.py)."""
    from arena import markdown
    from arena.battles.fragments import BLIND_FAILURE
    from arena.generations import status as status_line

    battle = shown.battle
    gen = battle.left if side == "left" else battle.right
    visible = battle.names_visible
    # A blind failure's own words could tell the sides apart; a stop's (the page closed) could not.
    reason = gen.failure_reason if visible or gen.status != gen.Status.FAILED else BLIND_FAILURE
    line = status_line.of(gen, detail=reason, blind=not visible)
    text = gen.text
    view = shown.side(side)
    if view is not None:  # blind: what its pacing shows now (arena/battles/pacing.py), not what is stored
        text = view.text
        reason = BLIND_FAILURE if view.state == "failed" else ""
        line = (status_line.of_event("", view.end_event, reason, blind=True) if view.ended and view.end_event
                else status_line.html("", view.state, reason))
    return {
        "side": side, "gen": gen, "visible": visible, "heading": heading, "battle": battle, "thread": thread,
        "label": gen.model.name if visible else ("Model A" if side == "left" else "Model B"),
        "status_line": mark_safe(line),  # format_html escaped it
        "answer": markdown.render(text),  # untrusted: Markdown without HTML (arena.markdown)
    }
