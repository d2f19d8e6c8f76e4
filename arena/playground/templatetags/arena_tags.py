import json

from django import template
from django.utils.safestring import mark_safe

from arena.playground import fragments

register = template.Library()


@register.simple_tag
def generation_panel(gen, can_change=True):
    """The status, output, metrics and controls of a generation as stored (escaped inside); without
    its Stop for a viewer who cannot change it (`can_change` false: a teammate)."""
    return mark_safe(fragments.stored(gen, stoppable=bool(can_change)))


@register.inclusion_tag("_tag_options.html", takes_context=True)
def tag_options(context):
    """The <datalist> the forms' tag inputs suggest from: the tags this user gave before."""
    from arena.generations.models import Generation

    return {"tags": Generation.objects.tags_given(context["request"].user)}


@register.filter
def params_line(params: dict | None) -> str:
    """Sampling parameters as a person reads them ("temperature 0.7 · top-p 0.95 · max 256 tokens"),
    leaving out the unset ones: the pages' one way to show a generation's params (`stop=[] seed=None` read raw)."""
    params = params or {}
    order = ["temperature", "top_p", "max_new_tokens", "seed", "stop", "json_schema", "regex"]
    parts = []
    for key in sorted(params, key=lambda k: (order.index(k) if k in order else len(order), k)):
        value = params[key]
        if value is None or value in ((), [], "", {}):
            continue
        if key == "temperature":
            parts.append(f"temperature {_number(value)}" + (" (greedy)" if value == 0 else ""))
        elif key == "top_p":
            parts.append(f"top-p {_number(value)}")
        elif key == "max_new_tokens":
            parts.append(f"max {value} tokens")
        elif key == "seed":
            parts.append(f"seed {value}")
        elif key == "stop":
            # JSON quoting shows a newline stop sequence as \n rather than as an invisible break.
            parts.append("stop at " + " or ".join(json.dumps(s, ensure_ascii=False) for s in value))
        elif key == "json_schema":
            parts.append("JSON schema")
        elif key == "regex":
            parts.append(f"regex {value}")
        else:
            parts.append(f"{key.replace('_', ' ')} {value}")
    return " · ".join(parts)


def _number(value) -> str:
    """0.7 rather than 0.7000000000000001 or 1.0; anything not a number as it is."""
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)
