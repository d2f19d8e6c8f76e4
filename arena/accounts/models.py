"""API tokens: only a hash is stored; the token itself is shown once, when made.

A token has a name its owner gives it, may expire (`expires_at`; null: never) and may be
revoked (`revoked_at`): an expired or revoked token is refused at once (401), as is any
token of a deactivated user. Owners list, make and revoke theirs on /account/tokens/ and
through /api/v1/tokens (arena.accounts.views)."""

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

TOKEN_PREFIX = "arena_"
NAME_MAX_LENGTH = 100
MAX_EXPIRY_DAYS = 3650  # ten years: longer is what null (never) is for


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet):
    def usable(self):
        """Neither revoked nor expired."""
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))

    def user_for(self, token: str):
        """The active user a bearer token belongs to, or None (unknown, revoked or expired)."""
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200 or "\x00" in token:
            return None
        found = self.usable().select_related("user").filter(digest=_digest(token), user__is_active=True).first()
        if found is None:
            return None
        type(found).objects.filter(id=found.id).update(last_used_at=timezone.now())
        return found.user


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=NAME_MAX_LENGTH, blank=True, default="",
                            help_text="What its owner calls it (e.g. the script that uses it).")
    digest = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=16, help_text="The token's first characters, to tell tokens apart.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Refused from then on; empty: never expires.")
    revoked_at = models.DateTimeField(null=True, blank=True, help_text="Refused from then on, for good.")

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.hint}… ({self.user})"

    @property
    def expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def state(self) -> str:
        """active, expired or revoked."""
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expired else "active"

    @classmethod
    def issue(cls, user, name: str = "", expires_in_days: int | None = None) -> str:
        """A new token for `user` (shown once: only its digest is kept)."""
        token, _record = cls.create(user, name=name, expires_in_days=expires_in_days)
        return token

    @classmethod
    def create(cls, user, name: str = "", expires_in_days: int | None = None) -> tuple[str, "ApiToken"]:
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
        record = cls.objects.create(user=user, name=name, digest=_digest(token), hint=token[:12],
                                    expires_at=expires_at)
        return token, record

    def revoke(self) -> bool:
        """Revoke once (a conditional update); a revoked token never works again."""
        now = timezone.now()
        updated = ApiToken.objects.filter(id=self.id, revoked_at__isnull=True).update(revoked_at=now)
        if updated:
            self.revoked_at = now
        return bool(updated)
