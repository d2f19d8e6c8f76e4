from django import template

from arena.workers.status import human_duration

register = template.Library()


@register.filter
def duration(seconds) -> str:
    """Seconds as people read them: "5 min 52 s" (arena/workers/status.py human_duration)."""
    return human_duration(seconds)
