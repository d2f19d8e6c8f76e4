from django import template
from django.utils.safestring import SafeString

from arena import markdown as md
from arena.battles.judging import orders_agree

register = template.Library()


@register.filter
def markdown(text: str) -> SafeString:
    """A model's answer as the other pages show one: Markdown without HTML (untrusted: arena.markdown)."""
    return md.render(text)


ORDERS_DISAGREED = "Tie because the two orders disagreed"
SAID = {"tie": "a tie", "both_bad": "both are bad"}


def _label(model) -> str:
    return getattr(model, "label", "") or model.name


@register.filter
def readings(battle) -> list[dict]:
    """A model judge's two readings of a pair in words: which answer it was shown first, what it
    said (naming the answer it preferred) and its raw text. A judged pair's names are not blind."""
    names = {"left": _label(battle.left.model), "right": _label(battle.right.model)}
    return [{"order": reading.get("order", ""),
             "first": names["right" if reading.get("order") == "right_first" else "left"],
             "said": (f"{names[reading['verdict']]} is better" if reading.get("verdict") in names
                      else SAID.get(reading.get("verdict"), "no verdict")),
             "raw": reading.get("raw", "")} for reading in battle.judgements or ()]


@register.filter
def orders_disagreed(battle) -> bool:
    """The pair is a tie only because the judge's two orders disagreed."""
    return orders_agree(battle.judgements) is False


@register.simple_tag
def orders_disagreed_text() -> str:
    return ORDERS_DISAGREED
