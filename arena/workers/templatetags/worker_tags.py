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
def megabytes(value, like=None) -> str:
    """A memory figure in MB: "500 MB" below 10 GB, else "31.2 GB" (an 80 GB GPU node in MB is
    five digits to count); in the unit `like` would get, where given (what is in use beside its
    total, what is reserved beside the budget: "1.5 GB" of "29.3 GB", not "1500 MB"); None is "–"."""
    if value is None:
        return "–"
    value = float(value)
    in_gb = float(like) >= 10 * 1024 if like else value >= 10 * 1024
    return f"{value / 1024:.1f} GB" if in_gb else f"{value:.0f} MB"


@register.filter
def short_node(node) -> str:
    """A node as a table cell shows it: its readable name as it is; a long id (Ray's are 56 hex
    digits: a worker or failure whose node is no longer listed) cut to its first 12, as Ray's
    own tools print them (the cell's title has it whole)."""
    node = str(node or "")
    return f"{node[:12]}…" if len(node) > 20 and all(c in "0123456789abcdef" for c in node) else node


@register.filter
def resource_cells(node: dict) -> list[tuple[str, str]]:
    """A status node's CPUs, GPUs and memory as (total, in use) texts: ("8", "2.5 in use");
    "" for the use where the backend reports none (local) or the node is lost, "in use: hidden"
    where it is withheld from this viewer (status.shown_node: reserved_mb withheld too);
    ("–", "") with no totals."""
    resources, in_use = node.get("resources"), node.get("in_use")
    withheld = node.get("reserved_mb") is None
    cells = []
    for name in ("cpus", "gpus", "memory_mb"):
        if not resources:
            cells.append(("–", ""))
            continue
        total = resources.get(name)
        if not node.get("alive", True):
            use = ""
        elif in_use:
            used = in_use.get(name)
            use = f"{megabytes(used, total) if name == 'memory_mb' else amount(used)} in use"
        else:
            use = "in use: hidden" if withheld else ""
        cells.append((megabytes(total) if name == "memory_mb" else amount(total), use))
    return cells
