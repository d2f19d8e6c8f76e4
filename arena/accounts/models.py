"""API tokens, invitations and sign-ups.

API tokens: only a hash is stored; the token itself is shown once, when made.

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


# --- A team moves in: invitations and sign-ups ------------------------------------------------
INVITATION_PREFIX = "invite_"


class InvitationQuerySet(models.QuerySet):
    def pending(self):
        """Neither used, revoked nor expired: the link still opens."""
        return self.filter(used_at__isnull=True, revoked_at__isnull=True, expires_at__gt=timezone.now())

    def find(self, token: str):
        """The invitation this link's token belongs to, in any state, or None (unknown)."""
        if not token.startswith(INVITATION_PREFIX) or len(token) > 200 or "\x00" in token:
            return None
        return self.filter(digest=_digest(token)).first()


class Invitation(models.Model):
    """A one-time link, made by staff, that lets its holder choose a username and a password.

    Only a digest of the link's token is kept (as API tokens): the link is shown once, to the staff
    member who made it (and e-mailed, where an address is given). It opens until it is used, revoked
    or past `expires_at` (ARENA_INVITATION_DAYS after it was made)."""

    digest = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=16, help_text="The token's first characters, to tell invitations apart.")
    email = models.EmailField(blank=True, default="", help_text="Where the link was sent; the new user's e-mail.")
    note = models.CharField(max_length=NAME_MAX_LENGTH, blank=True, default="",
                            help_text="Who it is for, as staff call them.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                                   related_name="invitations_made")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="invitation")
    team = models.ForeignKey("teams.Team", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                             help_text="The team the new user joins (and works in).")

    objects = InvitationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.hint}… ({self.state})"

    @property
    def state(self) -> str:
        """pending, used, revoked or expired (in that order: a used link stays 'used')."""
        if self.used_at is not None:
            return "used"
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expires_at <= timezone.now() else "pending"

    @classmethod
    def create(cls, by, email: str = "", note: str = "", days: int | None = None,
               team=None) -> tuple[str, "Invitation"]:
        """A new invitation and its token (shown once: only its digest is kept)."""
        token = INVITATION_PREFIX + secrets.token_urlsafe(32)
        days = days or settings.ARENA_INVITATION_DAYS
        record = cls.objects.create(digest=_digest(token), hint=token[:12], email=email, note=note, created_by=by,
                                    team=team, expires_at=timezone.now() + timedelta(days=days))
        return token, record

    def revoke(self) -> bool:
        """Revoke a pending invitation (a conditional update); a used one stays used."""
        now = timezone.now()
        updated = Invitation.objects.filter(id=self.id, used_at__isnull=True, revoked_at__isnull=True).update(
            revoked_at=now)
        if updated:
            self.revoked_at = now
        return bool(updated)

    def claim(self, user) -> bool:
        """Mark the invitation used by `user`, only if it is still pending at this moment (one conditional
        update, so two people holding the same link cannot both use it). Call inside the transaction that
        created the user, and roll it back on False."""
        now = timezone.now()
        updated = Invitation.objects.pending().filter(id=self.id).update(used_at=now, used_by=user)
        if updated:
            self.used_at, self.used_by = now, user
        return bool(updated)


class SignUp(models.Model):
    """Someone who signed up on the open sign-up page (ARENA_OPEN_SIGNUP=1): their user is made
    inactive and stays so until a staff member approves it (or refuses it: the user is deleted)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sign_up")
    created_at = models.DateTimeField(auto_now_add=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                    related_name="sign_ups_approved")

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.user} ({'approved' if self.approved_at else 'waiting'})"

    @property
    def waiting(self) -> bool:
        return self.approved_at is None

    def approve(self, by) -> bool:
        """Activate the user, once (a conditional update)."""
        now = timezone.now()
        if not SignUp.objects.filter(id=self.id, approved_at__isnull=True).update(approved_at=now, approved_by=by):
            return False
        self.approved_at, self.approved_by = now, by
        self.user.is_active = True
        self.user.save(update_fields=["is_active"])
        return True

    def refuse(self) -> None:
        """Delete a waiting sign-up's user (and so the sign-up); an approved one is left alone."""
        if self.waiting:
            self.user.delete()
