"""Starting a generation, shared by the page and the API."""

from django.db import transaction

from arena.catalogue.models import ModelEntry
from arena.generations import limits

from . import admission
from .models import Generation


@transaction.atomic
def start_generation(user, cleaned: dict, origin: str) -> Generation:
    """Raises limits.LimitExceeded when the user may not start another one now."""
    limits.check_start(user, cost=1)
    model: ModelEntry = cleaned["model"]
    gen = Generation.objects.create(
        owner=user,
        model=model,
        origin=origin,
        prompt=cleaned["prompt"],
        system_prompt=cleaned.get("system_prompt") or "",
        history=cleaned.get("history") or [],  # earlier turns [{role, content}] (the OpenAI-compatible API)
        params=cleaned["params"],
        tag=cleaned.get("tag") or "",
    )
    admission.submit()
    return gen
