from django import template
from django.template.loader import render_to_string
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from arena import markdown
from arena.battles import fragments
from arena.battles.forms import note_form
from arena.battles.models import ReasonTag

register = template.Library()


@register.simple_tag
def battle_side(shown, side: str):
    """One side's status, output and metrics as stored, or as paced while blind (escaped inside;
    speeds hidden when blind). `shown`: what the battle shows now (arena/battles/presenting.py)."""
    battle = shown.battle
    gen = battle.left if side == "left" else battle.right
    view = fragments.Side(side, battle.created_at.timestamp(), blind=battle.blind and not battle.revealed)
    paced = shown.side(side)
    if paced is not None:  # blind: what its pacing shows now, not what is stored
        return mark_safe(fragments.paced_frame([view], None, [paced]))
    return mark_safe(fragments.stored(view, gen))


@register.simple_tag
def side_thread(battle, side: str):
    """The earlier turns of this side's own conversation, as a chat transcript: each side of a
    follow-up continues its own thread (its own earlier answers), which Swap carries with it."""
    gen = battle.left if side == "left" else battle.right
    turns = [{"role": t.get("role"), "html": markdown.render(t.get("content") or "") if t.get("role") == "assistant"
              else None, "content": t.get("content") or ""} for t in gen.history]
    return render_to_string("battles/_thread.html", {"side": side, "turns": turns})


@register.simple_tag
def vote_buttons(shown, error: str = ""):
    """The vote buttons, disabled with the reason while the battle takes no verdict (`error`: a
    vote just refused, said in the reason's place). `shown`: arena/battles/presenting.py."""
    return mark_safe(fragments.verdict_open(shown.refusal, blind=not shown.battle.names_visible,
                                            stopped="cancelled" in shown.outcomes, error=error or ""))


@register.simple_tag
def side_label(battle, side: str, short: bool = False) -> str:
    """The model's name (`short`: its catalogue label, where space is short), or a neutral label
    while the battle is blind: never a name before the reveal."""
    if battle.names_visible:
        model = (battle.left if side == "left" else battle.right).model
        return (getattr(model, "label", "") or model.name) if short else model.name
    return "Model A" if side == "left" else "Model B"


OUTCOME_WORDS = {"tie": "Tie", "both_bad": "Both are bad"}


@register.filter
def verdict(battle, short: bool = False) -> str:
    """The verdict naming the winner ("Gemma 3 270M is better"; "Model A is better" while the
    battle is blind), not the side it sat on."""
    if battle.outcome in ("left", "right"):
        return f"{side_label(battle, battle.outcome, short)} is better"
    return OUTCOME_WORDS.get(battle.outcome, "")


@register.simple_tag
def speed_basis() -> str:
    """What a comparison's speeds were measured under (orchestration/cpus.py): an equal share each."""
    from orchestration import config

    shares = config.current().cpu_shares
    if shares == 1:
        return "Speeds: each model's worker may use every core of its machine, so two sides share them."
    return (f"Speeds: on a CPU machine each side runs on its own 1/{shares} of the cores "
            "(an equal share), so the two figures compare like with like.")


@register.inclusion_tag("battles/_why.html")
def vote_why(battle=None, form=None, team=None):
    """A verdict's optional note fields (reason checkboxes, a comment): `form` when a vote was just
    refused (what was typed, with the error), else filled from `battle`'s stored note; the reasons
    offered are every team's and the battle's team's (`team`: a suite run's, before its battle)."""
    return {"form": form or note_form(battle or None, team or None)}  # an unset context variable is ""


@register.simple_tag
def vote_note(battle, short: bool = False):
    """A verdict's reasons and comment, escaped, where the verdict shows, and only where the names
    are: a blind item's note shows once it is revealed (nothing before, not even beside its
    neutral labels). `short`: one line, the comment cut to 80 characters (History's list)."""
    if not battle.outcome or not battle.names_visible or not (battle.reasons or battle.comment):
        return ""
    labels = ReasonTag.labels() if battle.reasons else {}
    tags = format_html_join(" ", '<span class="reason-tag" data-reason="{}">{}</span>',
                            ((slug, labels.get(slug, slug)) for slug in battle.reasons))
    comment = battle.comment if not short or len(battle.comment) <= 80 else battle.comment[:79] + "…"
    said = format_html('<q class="vote-comment">{}</q>', comment) if comment else ""
    return format_html('<span class="vote-note" data-battle="{}">{}{}{}</span>', battle.id,
                       format_html("<span class=\"why-label\">Why:</span> {}", tags) if battle.reasons else "",
                       " " if tags and said else "", said)
