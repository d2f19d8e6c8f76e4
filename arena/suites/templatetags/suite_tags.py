from django import template
from django.utils.safestring import SafeString

from arena import markdown as md

register = template.Library()


@register.filter
def markdown(text: str) -> SafeString:
    """A model's answer as the other pages show one: Markdown without HTML (untrusted: arena.markdown)."""
    return md.render(text)
