from django import template
from django.utils.safestring import mark_safe

from arena.playground import fragments

register = template.Library()


@register.simple_tag
def generation_panel(gen):
    """The status, output, metrics and controls of a generation as stored (escaped inside)."""
    return mark_safe(fragments.stored(gen))


@register.inclusion_tag("_tag_options.html", takes_context=True)
def tag_options(context):
    """The <datalist> the forms' tag inputs suggest from: the tags this user gave before."""
    from arena import tags

    return {"tags": tags.used_by(context["request"].user)}
