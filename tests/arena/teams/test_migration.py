"""Teams came after the work: the migration moves every existing row of the five kinds that carry
a team (battles, generations, suites, suite runs, tournaments) into one default team, which every
existing user joins and works in. Run on SQLite and on PostgreSQL (scripts/test_postgres.sh);
seeded with the models as they were before teams, and every table's row count compared."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from arena.battles.models import Battle
from arena.catalogue.defaults import DEFAULT_ENTRIES
from arena.generations.models import Generation
from arena.suite_runs.models import SuiteRun
from arena.suites.models import Suite
from arena.teams import membership
from arena.teams.models import Membership, Team
from arena.tournaments.models import Tournament

BEFORE_TEAMS = [("teams", None)]  # unapplies teams and every migration that depends on it
WITH_A_TEAM = [Battle, Generation, Suite, SuiteRun, Tournament]


def _migrate(targets):
    MigrationExecutor(connection).migrate(targets)
    loader = MigrationExecutor(connection).loader
    return loader.project_state(list(loader.applied_migrations)).apps


def _latest():
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def _seed(old) -> None:
    """Two users' work in every kind that gets a team, with the rows those hang from."""
    users = [old.get_model("auth", "User").objects.create(username=name) for name in ("ada", "grace")]
    entries = old.get_model("catalogue", "ModelEntry").objects
    left, right = [entries.create(**entry, label=entry["slug"]) for entry in DEFAULT_ENTRIES[:2]]
    for user in users:
        gens = [old.get_model("generations", "Generation").objects.create(owner=user, model=m, prompt="Name a colour.")
                for m in (left, right)]
        battle = old.get_model("battles", "Battle").objects.create(owner=user, left=gens[0], right=gens[1])
        tournament = old.get_model("tournaments", "Tournament").objects.create(owner=user, prompt="Name a colour.",
                                                                               size=2)
        for seed, model in enumerate((left, right), start=1):
            old.get_model("tournaments", "Entrant").objects.create(tournament=tournament, model=model, seed=seed,
                                                                   position=seed)
        old.get_model("tournaments", "Match").objects.create(tournament=tournament, round=1, index=0, number=1,
                                                             left=left, right=right, battle=battle)
        suite = old.get_model("suites", "Suite").objects.create(owner=user, name=f"Colours of {user.username}")
        prompt = old.get_model("suites", "SuitePrompt").objects.create(suite=suite, position=1, prompt="Name one.")
        run = old.get_model("suite_runs", "SuiteRun").objects.create(owner=user, suite=suite)
        for position, model in enumerate((left, right), start=1):
            old.get_model("suite_runs", "SuiteContestant").objects.create(run=run, model=model, position=position)
        old.get_model("suite_runs", "SuiteAnswer").objects.create(run=run, prompt=prompt, contestant=left,
                                                                  generation=gens[0])


def _row_counts() -> dict[str, int]:
    with connection.cursor() as cursor:
        counts = {}
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f'SELECT COUNT(*) FROM "{table}"')
            counts[table] = cursor.fetchone()[0]
        return counts


@pytest.mark.django_db(transaction=True)
def test_existing_work_moves_into_one_default_team_that_every_user_works_in():
    old = _migrate(BEFORE_TEAMS)
    try:
        _seed(old)
        before = _row_counts()
    finally:
        _latest()

    after = _row_counts()
    lost = {table: (n, after.get(table)) for table, n in before.items() if after.get(table, 0) < n}
    assert not lost  # no row of any table went missing
    team = Team.objects.get()
    assert team.name == "Default team"
    for model in WITH_A_TEAM:
        assert model.objects.count() >= 2 and not model.objects.exclude(team=team).exists(), model.__name__
    assert sorted(Membership.objects.filter(team=team, current=True).values_list("user__username", flat=True)) == [
        "ada", "grace"]
    ada, grace = (m.user for m in Membership.objects.order_by("user__username"))
    assert membership.current_team(ada) == team
    # Each now sees the other's work (read-only: tests/arena/teams/test_teams.py has the rules).
    assert Battle.objects.filter(owner=grace, team__in=ada.team_memberships.values("team_id")).count() == 1


@pytest.mark.django_db(transaction=True)
def test_an_empty_database_gets_no_team_and_the_migration_goes_back():
    _migrate(BEFORE_TEAMS)
    _latest()
    assert not Team.objects.exists()  # staff make the first in the admin
    old = _migrate([("teams", "0001_initial")])  # back over the data migration, with a team to remove
    try:
        assert old.get_model("teams", "Team").objects.count() == 0
    finally:
        _latest()
