from django import template
from django.utils.safestring import mark_safe

from arena.playground import fragments

register = template.Library()


@register.simple_tag
def generation_panel(gen):
    """The status, output, metrics and controls of a generation as stored (escaped inside)."""
    return mark_safe(fragments.stored(gen))
