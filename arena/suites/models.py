"""Prompt suites: a named, tagged list of prompts a user owns, to run against models.

Each prompt may carry a system prompt, a reference answer and one answer constraint (a
JSON schema or a regex the answer must satisfy), its own checks and tags. A suite is created
in the browser, uploaded as a file (YAML, JSONL or CSV) or posted to the API, all checked by
arena.suites.parsing. Its prompts are never edited: a file imported again (the suite kept as
a file in a team's repository) makes a new *version*, new prompts numbered with it; the
suite's current prompts are those of its `version`, and each run reads the version it started
on (SuiteRun.suite_version), whose prompts stay. Only its owner opens it; a read-only share
link (arena.history) shows it to anyone."""

from __future__ import annotations

import json
import uuid

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from arena.generations import tags
from arena.teams.membership import MINE, in_scope

NAME_MAX_LENGTH = 200


class SuiteQuerySet(models.QuerySet):
    def owned_by(self, user):
        """The user's suites, newest first, each with `prompt_count`."""
        return self.in_scope(user, MINE)

    def in_scope(self, user, scope: str):
        """The suites of `scope` (the user's own, or their team's: teams.membership.in_scope),
        newest first, each with `prompt_count`."""
        current = models.Q(prompts__version=models.F("version"))
        return (self.filter(in_scope(user, scope)).annotate(prompt_count=models.Count("prompts", filter=current))
                .order_by("-created_at"))


class Suite(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="suites")
    team = models.ForeignKey("teams.Team", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                             help_text="The team it was made in: its members see it (arena/access.py).")
    name = models.CharField(max_length=NAME_MAX_LENGTH)
    tag = tags.model_field()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # Checks every answer of every prompt gets (arena/suites/checks.py specs), before the prompt's own.
    default_checks = models.JSONField(default=list, blank=True)
    # The current version: its prompts are the suite's; each import of a changed file adds one.
    version = models.PositiveIntegerField(default=1)

    objects = SuiteQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("suite-detail", args=[self.id])

    @property
    def delete_problem(self) -> str:
        """Why the suite cannot be deleted now ("" if it can): its runs' answers and verdicts need it."""
        if self.runs.exists():
            return "This suite has runs; its answers and verdicts refer to it, so it cannot be deleted."
        return ""

    def ordered_prompts(self):
        """The current version's prompts, in order."""
        return self.prompts_of(self.version)

    def prompts_of(self, version: int):
        """The prompts of one version (an earlier run's), in order."""
        return self.prompts.filter(version=version).order_by("position")


class SuitePrompt(models.Model):
    """One prompt of a suite; `position` its place, from 1. At most one of `json_schema`
    (a Draft 2020-12 JSON Schema the answer must satisfy) and `regex` (a regex the answer
    must satisfy) is set."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="prompts")
    version = models.PositiveIntegerField(default=1, help_text="The suite's version this prompt belongs to.")
    position = models.PositiveIntegerField()
    prompt = models.TextField()
    system_prompt = models.TextField(blank=True, help_text="Empty: the model's own system prompt.")
    reference = models.TextField(blank=True, help_text="A reference answer, to compare the answers with.")
    json_schema = models.JSONField(null=True, blank=True, help_text="A JSON Schema the answer must satisfy.")
    regex = models.TextField(blank=True, help_text="A regex the answer must match.")
    # This prompt's own checks of each answer (arena/suites/checks.py specs), after the suite's defaults.
    checks = models.JSONField(default=list, blank=True)
    # The prompt's own tags (pass rates per tag); the suite's `tag` is the whole suite's.
    tags = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["suite", "version", "position"]
        constraints = [models.UniqueConstraint(fields=["suite", "version", "position"],
                                               name="suite_prompt_version_position")]

    def __str__(self) -> str:
        return f"prompt {self.position} of suite {self.suite_id}, version {self.version}"

    @property
    def constraint(self) -> str:
        """Which constraint the answer has: "json_schema", "regex" or ""."""
        if self.json_schema is not None:
            return "json_schema"
        return "regex" if self.regex else ""

    @property
    def constraint_params(self) -> dict:
        """The sampling parameters of this prompt's constraint ({} when it has none)."""
        if self.json_schema is not None:
            return {"json_schema": self.json_schema}
        return {"regex": self.regex} if self.regex else {}

    @property
    def json_schema_text(self) -> str:
        return json.dumps(self.json_schema, indent=2, ensure_ascii=False) if self.json_schema is not None else ""
