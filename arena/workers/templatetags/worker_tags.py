from django import template

from arena.workers.status import human_duration

register = template.Library()


@register.filter
def duration(seconds) -> str:
    """Seconds as people read them: "5 min 52 s" (arena/workers/status.py human_duration)."""
    return human_duration(seconds)


@register.filter
def amount(value) -> str:
    """A count of CPUs or GPUs as Ray reports it (a float): "8", "0.5", "2.25"; None is "–"."""
    if value is None:
        return "–"
    return f"{round(float(value), 2):g}"


@register.filter
def megabytes(value) -> str:
    """A memory figure in MB: "500 MB" up to 10 GB, then "31.2 GB" (a 80 GB GPU node in MB is
    five digits to count); None is "–"."""
    if value is None:
        return "–"
    value = float(value)
    return f"{value / 1024:.1f} GB" if value >= 10 * 1024 else f"{value:.0f} MB"


@register.filter
def resource_cells(node: dict) -> list[tuple[str, str]]:
    """A status node's CPUs, GPUs and memory as (total, in use) texts: ("8", "2.5 in use");
    "" for the use where the backend reports none (local), "in use: hidden" where it is withheld
    from this viewer (status.shown_node: reserved_mb withheld too); ("–", "") with no totals."""
    resources, in_use = node.get("resources"), node.get("in_use")
    withheld = node.get("reserved_mb") is None
    cells = []
    for name, shown in (("cpus", amount), ("gpus", amount), ("memory_mb", megabytes)):
        if not resources:
            cells.append(("–", ""))
        elif in_use:
            cells.append((shown(resources.get(name)), f"{shown(in_use.get(name))} in use"))
        else:
            cells.append((shown(resources.get(name)), "in use: hidden" if withheld else ""))
    return cells
