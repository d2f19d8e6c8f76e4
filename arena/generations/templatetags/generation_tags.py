"""A generation's status line and timings in templates: the same words and markup as the sockets'
fragments (arena/generations/status.py, templates/generations/_metrics.html)."""

from django import template
from django.utils.safestring import mark_safe

from arena.generations import status
from arena.generations.models import Generation

register = template.Library()


@register.simple_tag
def generation_status(gen, element_id: str = "", blind: bool = False):
    """`{% generation_status gen %}`: "Done", "Stopped at 128 tokens", "Failed <reason>"... as a <div>."""
    return mark_safe(status.of(gen, element_id, blind=blind))  # format_html escaped it


def _field(gen, name: str):
    """A Generation's field, or a dict's key of that name (a socket keeps what a list shows as a dict)."""
    return gen.get(name) if isinstance(gen, dict) else getattr(gen, name, None)


@register.filter
def status_text(gen) -> str:
    """`{{ gen|status_text }}`: the words alone, for a list's cell or a summary."""
    return status.text(_field(gen, "status") or "", _field(gen, "finish_reason") or "",
                       tokens=_field(gen, "generated_tokens"),
                       limit=(_field(gen, "params") or {}).get("max_new_tokens"),
                       reason=_field(gen, "failure_reason") or "")


@register.filter
def outcome(gen) -> str:
    """`{{ gen|outcome }}`: done, length, stop_sequence, cancelled, failed (or the live status), for data-*."""
    return status.outcome(_field(gen, "status") or "", _field(gen, "finish_reason") or "")


@register.filter
def cached_answers(run_id) -> int:
    """`{{ run.id|cached_answers }}`: how many generations of the run (a suite run's answers and
    readings) reused a stored answer instead of generating (arena/generations/cache.py)."""
    return Generation.objects.filter(run_id=run_id, cached_from__isnull=False).count()
