"""Teams: the work a user makes belongs to the team they work in, and the team's members see it.

Staff make teams and add members (in the admin, or an invitation that names a team). A user in
several teams works in one at a time (`Membership.current`, the header's switcher): what they
start goes into it, and "my team's" lists show it. Who may open or change a team's work is
arena/access.py's rule; the rest of the app reads memberships through `membership.py`."""

from django.conf import settings
from django.db import models
from django.utils import timezone


class Team(models.Model):
    name = models.CharField(max_length=80, unique=True, help_text="As the switcher and History show it.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships")
    current = models.BooleanField(default=False, help_text="The team this user works in now (one at most).")
    joined_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team__name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="one_membership_per_team"),
            models.UniqueConstraint(fields=["user"], condition=models.Q(current=True), name="one_current_team"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team}"
