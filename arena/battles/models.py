"""A battle: two generations of one prompt run side by side, and the user's verdict.

A comparison is a named battle the user set up; a tournament match is a blind one.
Every verdict stays here as the battle record the leaderboard reads: the two
variants (through the generations), their positions, the prompt, the outcome and
whether the user could see the names.

A verdict comes from a person, or from a model judge (`judge` set: a catalogue entry, the
judging template's version and both raw judgements, one per order shown). A suite run pairs
its stored answers round robin and has them judged by a model and by people, so one
Generation can take part in several battles (`left`/`right` are foreign keys, not one-to-one).
A comparison's or a tournament's generation still has exactly one battle; where code asks for
"the battle of this generation" it means the human (non-judged) one: `Battle.of_generation`.
"""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from arena.generations import tags
from arena.generations.models import Generation


class Battle(models.Model):
    RUN_KIND = "battle"  # its two generations' run kind (arena/generations/runs.py, registered in tasks.py)

    class Mode(models.TextChoices):
        COMPARISON = "comparison"
        TOURNAMENT = "tournament"
        SUITE = "suite"  # a pair from a suite run: stored answers, judged by a model or by people
        ANONYMOUS = "anonymous"  # the app drew the pair (arena/battles/draw.py); blind until the user votes

    class Outcome(models.TextChoices):
        LEFT = "left", "Left is better"
        RIGHT = "right", "Right is better"
        TIE = "tie", "Tie"
        BOTH_BAD = "both_bad", "Both are bad"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="battles")
    team = models.ForeignKey("teams.Team", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                             help_text="The team it was made in: its members see it (arena/access.py).")
    mode = models.CharField(max_length=12, choices=Mode.choices, default=Mode.COMPARISON)
    blind = models.BooleanField(default=False, help_text="The user judged without the names.")
    revealed = models.BooleanField(default=False,
                                   help_text="A blind battle's names may be shown (its tournament ended).")
    left = models.ForeignKey(Generation, on_delete=models.CASCADE, related_name="battles_as_left")
    right = models.ForeignKey(Generation, on_delete=models.CASCADE, related_name="battles_as_right")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children",
                               help_text="The battle this one re-runs, swaps or continues.")
    outcome = models.CharField(max_length=10, choices=Outcome.choices, blank=True)
    voted_at = models.DateTimeField(null=True, blank=True)
    tag = tags.model_field()
    self_identified = models.BooleanField(default=False, help_text="An answer named its own model.")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # An anonymous battle: why the draw chose this pair (arena/battles/draw.py), shown with the names.
    pick_reason = models.CharField(max_length=16, blank=True, choices=[
        ("random", "drawn at random"), ("least_settled", "chosen: their order was the least settled")])
    # A model judge's verdict (never mixed silently with people's: the leaderboard filters on it).
    judge = models.ForeignKey("catalogue.ModelEntry", null=True, blank=True, on_delete=models.PROTECT,
                              related_name="judged_battles", help_text="Set: the verdict came from this model judge.")
    judge_template_version = models.PositiveIntegerField(null=True, blank=True,
                                                         help_text="The version of the judging prompt template.")
    judgements = models.JSONField(default=list, blank=True, help_text=(
        'Both raw judgements, one per order shown: [{"order": "left_first", "raw": "...", "verdict": "left"}, '
        '{"order": "right_first", ...}], verdicts always in this battle\'s left/right terms.'))
    # A person's note with the verdict (arena/battles/voting.py: Note, clean_note): reason tags by
    # slug (ReasonTag) and a short comment. Shown only where the names are.
    reasons = models.JSONField(default=list, blank=True, help_text="The reason tags given with the verdict (slugs).")
    comment = models.TextField(blank=True, help_text="The voter's comment with the verdict (at most 500 characters).")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.left.model.slug} vs {self.right.model.slug}: {self.prompt[:40]}"

    def get_absolute_url(self) -> str:
        if self.mode == self.Mode.ANONYMOUS:
            return reverse("arena-battle", args=[self.id])
        return reverse("battle-detail", args=[self.id])

    @classmethod
    def of_generation(cls, gen: Generation):
        """The human (non-judged) battle `gen` is a side of, or None. A comparison's or a
        tournament's generation has exactly one; a suite's answer may also have judged ones."""
        return cls.objects.filter(Q(left_id=gen.id) | Q(right_id=gen.id), judge__isnull=True).first()

    @property
    def judged(self) -> bool:
        """The verdict came from a model judge, not a person."""
        return self.judge_id is not None

    @property
    def prompt(self) -> str:
        return self.left.prompt

    @property
    def sides(self) -> tuple[tuple[str, Generation], tuple[str, Generation]]:
        return (("left", self.left), ("right", self.right))

    @property
    def names_visible(self) -> bool:
        return not self.blind or self.revealed

    @property
    def finished(self) -> bool:
        return self.left.finished and self.right.finished

    @property
    def paced(self) -> bool:
        """Shown at one steady pace (arena/battles/pacing.py), not as generated: blind until the reveal."""
        return self.blind and not self.revealed

    @property
    def answers_stored(self) -> bool:
        """Both answers are stored as done: what a follow-up needs (it copies their text)."""
        return self.left.status == Generation.Status.DONE and self.right.status == Generation.Status.DONE

    def ancestor_ids(self) -> list:
        """The battles this one continues, nearest first (a follow-up's earlier turns)."""
        ids, parent = [], self.parent_id
        while parent is not None and parent not in ids:
            ids.append(parent)
            parent = Battle.objects.filter(id=parent).values_list("parent_id", flat=True).first()
        return ids


class ArenaExclusion(models.Model):
    """A catalogue entry staff keep out of the anonymous battles' draw (arena/battles/draw.py): it
    stays enabled for the playground, comparisons and tournaments."""

    model = models.OneToOneField("catalogue.ModelEntry", on_delete=models.CASCADE, related_name="arena_exclusion")
    reason = models.CharField(max_length=200, blank=True, help_text="Why it is left out (for other staff).")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["model__name"]
        verbose_name = "entry excluded from the arena draw"
        verbose_name_plural = "entries excluded from the arena draw"

    def __str__(self) -> str:
        return f"{self.model} (excluded from the arena draw)"


class ReasonTag(models.Model):
    """One reason a person may give with a verdict ("too long", "factual error"), offered as a
    checkbox beside the vote buttons and accepted by the API's vote endpoints by its slug.

    A reason is every team's (no team: the defaults come from a migration) or one team's, edited by
    staff in the admin; a vote is offered every team's and its battle's team's (`offered`). A
    verdict keeps the slugs it was given: untick *active* to stop offering a reason (past verdicts
    keep it, under its label)."""

    slug = models.SlugField(max_length=40, unique=True,
                            help_text="What votes store and the API takes: never reuse one.")
    label = models.CharField(max_length=60, help_text="What the vote forms, History and the leaderboard show.")
    position = models.PositiveSmallIntegerField(default=0, help_text="Order on the forms (smallest first).")
    active = models.BooleanField(default=True, help_text="Offered with votes. Untick to retire it: past votes keep it.")
    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, null=True, blank=True, related_name="+",
                             help_text="Empty: every team's. A team's own reason is offered on its votes only.")

    class Meta:
        ordering = ["position", "label"]
        verbose_name = "vote reason"

    def __str__(self) -> str:
        return self.label

    @classmethod
    def offered(cls, team=None) -> list[tuple[str, str]]:
        """(slug, label) of every reason a vote of `team`'s battle may carry now (every team's and
        its own), in the forms' order."""
        scope = models.Q(team=None) | models.Q(team=team) if team is not None else models.Q(team=None)
        return list(cls.objects.filter(scope, active=True).values_list("slug", "label"))

    @classmethod
    def labels(cls) -> dict[str, str]:
        """Every reason's label by slug, retired ones too (what a stored verdict shows)."""
        return dict(cls.objects.values_list("slug", "label"))
