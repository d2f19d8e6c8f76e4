"""Writes on suites, shared by the page and the API."""

from __future__ import annotations

from django.db import transaction

from .models import Suite, SuitePrompt
from .parsing import PromptSpec


@transaction.atomic
def create_suite(owner, *, name: str, prompts: list[PromptSpec], tag: str = "",
                 default_checks: list | None = None) -> Suite:
    """A suite with these checked prompts (arena.suites.parsing), numbered from 1, and the
    checked checks every answer gets (parsing.check_defaults)."""
    suite = Suite.objects.create(owner=owner, name=name, tag=tag, default_checks=default_checks or [])
    SuitePrompt.objects.bulk_create([SuitePrompt(suite=suite, position=i, **spec.as_dict())
                                     for i, spec in enumerate(prompts, start=1)])
    return suite
