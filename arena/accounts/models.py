"""API tokens: only a hash is stored; the token itself is shown once, when made."""

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

TOKEN_PREFIX = "arena_"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet):
    def user_for(self, token: str):
        """The active user a bearer token belongs to, or None."""
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        found = self.select_related("user").filter(digest=_digest(token), user__is_active=True).first()
        if found is None:
            return None
        type(found).objects.filter(id=found.id).update(last_used_at=timezone.now())
        return found.user


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    digest = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=16, help_text="The token's first characters, to tell tokens apart.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.hint}… ({self.user})"

    @classmethod
    def issue(cls, user) -> str:
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        cls.objects.create(user=user, digest=_digest(token), hint=token[:12])
        return token
