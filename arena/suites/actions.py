"""Writes on suites, shared by the page and the API: create one, import a new version of one."""

from __future__ import annotations

from dataclasses import replace

from django.db import transaction

from arena.categories import actions as categories
from arena.teams import membership

from .models import Suite, SuitePrompt
from .parsing import PromptSpec, SuiteFile


@transaction.atomic
def create_suite(owner, *, name: str, prompts: list[PromptSpec], tag: str = "",
                 default_checks: list | None = None) -> Suite:
    """A suite with these checked prompts (arena.suites.parsing), numbered from 1, on version 1, and
    the checked checks every answer gets (parsing.check_defaults)."""
    suite = Suite.objects.create(owner=owner, team=membership.current_team(owner), name=name, tag=tag,
                                 default_checks=default_checks or [])
    _add_prompts(suite, prompts)
    return suite


def _add_prompts(suite: Suite, prompts: list[PromptSpec]) -> None:
    rows = SuitePrompt.objects.bulk_create([SuitePrompt(suite=suite, version=suite.version, position=i,
                                                        **spec.as_dict())
                                            for i, spec in enumerate(prompts, start=1)])
    for row in rows:  # each prompt's category: by rule, else the classifier (queued)
        categories.assign(suite.owner, "suite_prompt", row.pk, row.prompt, [*(row.tags or []), suite.tag],
                          team=suite.team)


def current_file(suite: Suite) -> SuiteFile:
    """The suite's current version as a file holds it (what an export writes)."""
    prompts = [PromptSpec(p.prompt, p.system_prompt, p.reference, p.json_schema, p.regex, p.checks, p.tags)
               for p in suite.ordered_prompts()]
    return SuiteFile(prompts, name=suite.name, tag=suite.tag, default_checks=suite.default_checks)


@transaction.atomic
def import_version(suite: Suite, new: SuiteFile) -> bool:
    """`new` (a checked file or API body) as the suite's prompts: a new version when its prompts or
    default checks differ from the current ones (True), else nothing new (False). The old
    version's prompts stay, with the answers of the runs that ran them. A name or tag the file
    gives replaces the suite's either way (they name the suite, they are not what a run ran);
    a file that gives no default checks (JSONL, CSV) keeps the suite's."""
    if new.default_checks is None:
        new = replace(new, default_checks=suite.default_checks)
    locked = Suite.objects.select_for_update().get(id=suite.id)  # two imports at once make two versions
    suite.version = locked.version
    changed = _differs(suite, new)
    if changed:
        suite.version += 1
        suite.default_checks = new.default_checks
        _add_prompts(suite, new.prompts)
    suite.name = new.name or suite.name
    suite.tag = suite.tag if new.tag is None else new.tag
    suite.save(update_fields=["version", "default_checks", "name", "tag"])
    return changed


def _differs(suite: Suite, new: SuiteFile) -> bool:
    current = current_file(suite)
    return current.prompts != new.prompts or current.default_checks != new.default_checks
