"""Categories of prompt (a name and a description, "coding", "support replies"), the rules that
place a prompt in one, and each prompt's assignment: which category, and how it was given (by a
rule, by the classifier, by its owner, or none).

A category is every team's (no team) or one team's (staff edit both): a prompt is placed among
those of its battle's or suite's team (`CategoryQuerySet.for_team`). An assignment names its
subject by kind and id (a battle, a suite prompt) rather than by a
foreign key: this app sits below battles and suites (they call it when they create a prompt), and
the leaderboard, above both, joins them (arena/leaderboard/by_category.py)."""

from __future__ import annotations

import hashlib
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from . import rules


class CategoryQuerySet(models.QuerySet):
    def for_team(self, team):
        """Every team's categories and `team`'s own (None: every team's only)."""
        return self.filter(models.Q(team=None) | models.Q(team=team)) if team is not None else self.filter(team=None)


class Category(models.Model):
    name = models.CharField(max_length=60,
                            help_text="Short, as the classifier and the leaderboard show it: \"coding\".")
    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, null=True, blank=True, related_name="categories",
                             help_text="Empty: every team's. A team's own category is offered to its prompts only.")
    description = models.CharField(max_length=300, blank=True,
                                   help_text="What prompts it holds; the classifier reads it.")
    position = models.PositiveIntegerField(default=0, help_text="Its place in lists and tables.")
    created_at = models.DateTimeField(default=timezone.now)

    objects = CategoryQuerySet.as_manager()

    class Meta:
        ordering = ["position", "name"]
        verbose_name_plural = "categories"
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="category_name_per_team"),
            models.UniqueConstraint(fields=["name"], condition=models.Q(team=None), name="category_name_everyones"),
        ]

    def __str__(self) -> str:
        return self.name


class Rule(models.Model):
    """Keywords, a regex or a tag that places a prompt in its category; tried in `position` order."""

    class Kind(models.TextChoices):
        KEYWORDS = rules.KEYWORDS, "keywords"
        REGEX = rules.REGEX, "regex"
        TAG = rules.TAG, "prompt tag"

    category = models.ForeignKey(Category, on_delete=models.CASCADE, related_name="rules")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    value = models.CharField(max_length=rules.MAX_VALUE_CHARS, help_text=(
        "Keywords: comma-separated words or phrases (whole words, case ignored). Regex: searched anywhere "
        "in the prompt, stopped after a quarter of a second. Tag: a prompt tag."))
    position = models.PositiveIntegerField(default=0, help_text="Rules are tried in this order, lowest first.")

    class Meta:
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.value!r} → {self.category}"

    def clean(self) -> None:
        try:
            rules.compile_rule(self.kind, self.value)
        except rules.RuleError as exc:
            raise ValidationError({"value": str(exc)}) from None

    def as_rule(self) -> rules.Rule:
        return rules.Rule(self.pk, self.category.name, self.kind, self.value)


def digest(prompt: str) -> str:
    """The prompt's SHA-256: a suite run's battles find their suite prompt's category by it."""
    return hashlib.sha256(prompt.encode()).hexdigest()


class Assignment(models.Model):
    """The category of one prompt: a battle's or a suite prompt's."""

    class Subject(models.TextChoices):
        BATTLE = "battle"
        SUITE_PROMPT = "suite_prompt"

    class Source(models.TextChoices):
        RULE = "rule", "by rule"
        PENDING = "pending", "the classifier is reading it"
        CLASSIFIER = "classifier", "by the classifier"
        OWNER = "owner", "set by its owner"
        NONE = "none", "no category"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    subject_kind = models.CharField(max_length=16, choices=Subject.choices)
    subject_id = models.CharField(max_length=64)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="category_assignments")
    team = models.ForeignKey("teams.Team", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                             help_text="Its battle's or suite's team: whose categories it is placed among.")
    prompt = models.TextField()
    digest = models.CharField(max_length=64, db_index=True)
    tags = models.JSONField(default=list, blank=True)
    category = models.ForeignKey(Category, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="assignments")
    source = models.CharField(max_length=12, choices=Source.choices)
    rule = models.ForeignKey(Rule, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    classifier = models.ForeignKey("catalogue.ModelEntry", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    generation = models.ForeignKey("generations.Generation", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+", help_text="The classifier's reply.")
    note = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["subject_kind", "subject_id"], name="category_one_per_subject")]
        indexes = [models.Index(fields=["owner", "-created_at"], name="category_owner_newest")]

    def __str__(self) -> str:
        return f"{self.subject_kind} {self.subject_id}: {self.category or 'none'} ({self.source})"

    @property
    def how(self) -> str:
        """How the category was given, in words: "by rule", "by the classifier"..."""
        return self.get_source_display()

    @classmethod
    def category_name(cls, subject_kind: str, subject_id) -> str | None:
        """The name of the category a battle or suite prompt got (None: none, or not yet)."""
        return (cls.objects.filter(subject_kind=subject_kind, subject_id=str(subject_id), category__isnull=False)
                .values_list("category__name", flat=True).first())
