"""Existing work moves into one default team, and every existing user joins it (working in it).

Before teams, every user's work was theirs alone; afterwards their team sees it (read-only). A
database with no users and no work gets no team: staff make the first in the admin."""

from django.conf import settings
from django.db import migrations

DEFAULT_TEAM = "Default team"
TABLES = [("battles", "Battle"), ("generations", "Generation"), ("suites", "Suite"), ("suite_runs", "SuiteRun"),
          ("tournaments", "Tournament")]


def forwards(apps, schema_editor):
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    Team, Membership = apps.get_model("teams", "Team"), apps.get_model("teams", "Membership")
    models = [apps.get_model(app, name) for app, name in TABLES]
    if not User.objects.exists() and not any(m.objects.exists() for m in models):
        return
    team, _ = Team.objects.get_or_create(name=DEFAULT_TEAM)
    Membership.objects.bulk_create([Membership(team=team, user_id=user_id, current=True)
                                    for user_id in User.objects.values_list("id", flat=True)])
    for model in models:
        model.objects.filter(team__isnull=True).update(team=team)


def backwards(apps, schema_editor):
    Team = apps.get_model("teams", "Team")
    for app, name in TABLES:
        apps.get_model(app, name).objects.update(team=None)
    Team.objects.filter(name=DEFAULT_TEAM).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("teams", "0001_initial"),
        ("battles", "0006_battle_team"),
        ("generations", "0011_generation_team"),
        ("suites", "0006_suite_team"),
        ("suite_runs", "0010_suiterun_team"),
        ("tournaments", "0003_tournament_team"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]
    operations = [migrations.RunPython(forwards, backwards)]
