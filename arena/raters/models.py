"""Rater links: a named, expiring, capped, revocable link through which someone without an
account judges a suite run's pairs blind (arena.raters.views.rate). Only a digest of the link's
token is stored (sha256, as share links and API tokens: arena.history.models.new_token/digest);
the full link is shown to the run's owner once, when it is made.

A link's verdicts are the run's people's verdicts (suite battles of the run's owner), each
attributed to the link by arena.suite_runs.models.RaterVerdict."""

from __future__ import annotations

import secrets
from datetime import datetime

from django.db import models
from django.urls import reverse
from django.utils import timezone

from arena.history.models import HINT_CHARS, digest

NAME_MAX = 80
MAX_CAP = 10_000
MAX_LINKS = 50  # per run

ACTIVE, DONE, CAPPED, EXPIRED, REVOKED = "active", "done", "capped", "expired", "revoked"


class RaterLinkQuerySet(models.QuerySet):
    def resolve(self, token: str) -> RaterLink | None:
        """The link with this exact token (any state: the page says why it ended), or None."""
        if not token or len(token) > 100:
            return None
        return self.select_related("run__suite", "run__owner").filter(
            digest=digest(token), run__owner__is_active=True).first()


class RaterLink(models.Model):
    run = models.ForeignKey("suite_runs.SuiteRun", on_delete=models.CASCADE, related_name="rater_links")
    name = models.CharField(max_length=NAME_MAX, help_text='Who rates through it, e.g. "Support lead".')
    digest = models.CharField(max_length=64, unique=True, editable=False, help_text="sha256 of the link's token.")
    hint = models.CharField(max_length=HINT_CHARS, editable=False, default="",
                            help_text="The token's first characters, to tell links apart.")
    position = models.PositiveSmallIntegerField(help_text="The link's number in its run, from 0: which way round "
                                                          "it is shown each pair (arena.raters.queue).")
    seed = models.BigIntegerField(default=0, help_text="Shuffles the order of this link's queue.")
    expires_at = models.DateTimeField()
    cap = models.PositiveIntegerField(help_text="The most verdicts it may give.")
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True, help_text="The rater said they were done, or had "
                                                                         "nothing left to judge.")

    objects = RaterLinkQuerySet.as_manager()

    class Meta:
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "position"], name="rater_link_position")]

    def __str__(self) -> str:
        return f"rater link {self.name!r} of run {self.run_id}"

    @staticmethod
    def new_seed() -> int:
        return secrets.randbelow(2**31)

    def url(self, token: str) -> str:
        return reverse("rater-page", args=[token])

    def state(self, now: datetime, given: int) -> str:
        """Why the link takes no more verdicts (REVOKED, EXPIRED, CAPPED, DONE), or ACTIVE;
        `given`: its verdicts so far."""
        if self.revoked_at is not None:
            return REVOKED
        if now >= self.expires_at:
            return EXPIRED
        if given >= self.cap:
            return CAPPED
        if self.finished_at is not None:
            return DONE
        return ACTIVE
