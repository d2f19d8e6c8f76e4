"""Read-only share links: an unguessable URL to one generation, battle, tournament, prompt
suite or suite run.

The owner creates a link from the object's permalink page and may revoke it; a revoked
link stays revoked (a new one gets a new token). Anyone holding an active link sees the
object as its owner would, read-only, blindness included: an unrevealed blind battle or
tournament shows neutral labels only (see arena.history.share). A link whose owner is
deactivated opens nothing.

Only a digest of a link's token is stored (sha256, as API tokens): the full link exists
only in the answer that made it (`ShareLink.share` sets `link.token` on a link it has just
created) and where its owner put it; the owner's pages show it once, then only that a link
exists, with its first characters, so it can be revoked."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

TOKEN_BYTES = 32  # 43 URL-safe characters, 256 bits
KINDS = ("generation", "battle", "tournament", "suite", "suite_run")  # a link's target: one foreign key each
_KIND_OF_MODEL = {"suiterun": "suite_run"}  # a model's name -> its kind, where they differ


HINT_CHARS = 6  # the token's first characters, kept to tell links apart
NEW_LINKS = "arena_new_share_links"  # session key: links just made, by id, until their owner's page shows them once


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


BATTLE_NOUNS = {"comparison": "comparison", "anonymous": "anonymous battle", "tournament": "tournament match",
                "suite": "suite-run pair"}  # by Battle.Mode


def noun(obj) -> str:
    """What a user calls the object: generation, comparison, anonymous battle, tournament match,
    suite-run pair, tournament, prompt suite or suite run."""
    if obj._meta.model_name == "battle":
        return BATTLE_NOUNS.get(obj.mode, "battle")
    return {"suite": "prompt suite", "suiterun": "suite run"}.get(obj._meta.model_name, obj._meta.model_name)


def _exactly_one_target() -> Q:
    """One of the KINDS' foreign keys set, the others null."""
    condition = Q()
    for kind in KINDS:
        condition |= Q(**{f"{k}__isnull": k != kind for k in KINDS})
    return condition


class ShareLinkQuerySet(models.QuerySet):
    def active(self):
        return self.filter(revoked_at__isnull=True)

    def for_object(self, obj):
        return self.filter(**{ShareLink.kind_of(obj): obj})

    def resolve(self, token: str) -> ShareLink | None:
        """The active link with this exact token, or None (unknown, revoked, or its owner deactivated)."""
        if not token or len(token) > 100:
            return None
        related = ("generation__model", "battle__left__model", "battle__right__model", "tournament__winner", "suite",
                   "suite_run__suite")
        return self.active().select_related(*related).filter(digest=digest(token), owner__is_active=True).first()


class ShareLink(models.Model):
    class Kind(models.TextChoices):
        GENERATION = "generation"
        BATTLE = "battle"
        TOURNAMENT = "tournament"
        SUITE = "suite"
        SUITE_RUN = "suite_run"

    digest = models.CharField(max_length=64, unique=True, editable=False, help_text="sha256 of the link's token.")
    hint = models.CharField(max_length=HINT_CHARS, editable=False, default="",
                            help_text="The token's first characters, to tell links apart.")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="share_links")
    generation = models.ForeignKey("generations.Generation", null=True, blank=True, on_delete=models.CASCADE,
                                   related_name="share_links")
    battle = models.ForeignKey("battles.Battle", null=True, blank=True, on_delete=models.CASCADE,
                               related_name="share_links")
    tournament = models.ForeignKey("tournaments.Tournament", null=True, blank=True, on_delete=models.CASCADE,
                                   related_name="share_links")
    suite = models.ForeignKey("suites.Suite", null=True, blank=True, on_delete=models.CASCADE,
                              related_name="share_links")
    suite_run = models.ForeignKey("suite_runs.SuiteRun", null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="share_links")
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    views = models.PositiveIntegerField(default=0, help_text="How many times the shared page was opened.")
    last_viewed_at = models.DateTimeField(null=True, blank=True)

    objects = ShareLinkQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(name="sharelink_exactly_one_target", condition=_exactly_one_target()),
            # One active link per object: sharing twice (a double click, two tabs) gives the same URL.
            *[models.UniqueConstraint(fields=[kind], condition=Q(revoked_at__isnull=True),
                                      name=f"sharelink_one_active_per_{kind}")
              for kind in KINDS],
        ]

    def __str__(self) -> str:
        return f"{self.kind} link {self.hint}…"

    # The token itself: known only on a link `share` has just made (never stored).
    token: str | None = None

    def get_absolute_url(self) -> str:
        """The link's URL: only on the link `share` has just made (only a digest is stored)."""
        if not self.token:
            raise ValueError("Only a digest of this link's token is stored: its URL was shown when it was made.")
        return reverse("share", args=[self.token])

    @staticmethod
    def kind_of(obj) -> str:
        """The field an object goes in: 'generation', 'battle', 'tournament', 'suite' or 'suite_run'."""
        kind = _KIND_OF_MODEL.get(obj._meta.model_name, obj._meta.model_name)
        if kind not in ShareLink.Kind.values:
            raise TypeError(f"{type(obj).__name__} cannot be shared.")
        return kind

    @property
    def kind(self) -> str:
        return next(k for k in self.Kind.values if getattr(self, f"{k}_id") is not None)

    @property
    def target(self):
        return getattr(self, self.kind)

    @property
    def noun(self) -> str:
        return noun(self.target)

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    @classmethod
    def share(cls, owner, obj) -> ShareLink:
        """The object's active link, created if it has none (then, and only then, with its
        `token`: it is not stored). Only the owner may share: the caller looks the object up
        by owner; this checks it again."""
        if obj.owner_id != owner.id:
            raise PermissionError("Only the owner can share this.")
        kind = cls.kind_of(obj)
        existing = cls.objects.active().filter(**{kind: obj}).first()
        if existing:
            return existing
        token = new_token()
        try:
            with transaction.atomic():
                link = cls.objects.create(owner=owner, digest=digest(token), hint=token[:HINT_CHARS], **{kind: obj})
        except IntegrityError:  # another request created it first
            return cls.objects.active().get(**{kind: obj})
        link.token = token
        return link

    def revoke(self) -> bool:
        """Revoke once (conditional update); a revoked link is never active again."""
        now = timezone.now()
        updated = ShareLink.objects.filter(id=self.id, revoked_at__isnull=True).update(revoked_at=now)
        if updated:
            self.revoked_at = now
        return bool(updated)

    def note_view(self) -> None:
        ShareLink.objects.filter(id=self.id).update(views=models.F("views") + 1, last_viewed_at=timezone.now())
