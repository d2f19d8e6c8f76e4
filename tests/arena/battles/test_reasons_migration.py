"""The migration that gives verdicts their reasons: a battle judged before it keeps its verdict,
with no reasons and no comment, and the default reason list is there to vote with."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from arena.battles.models import Battle, ReasonTag
from arena.battles.voting import DEFAULT_REASONS
from arena.catalogue.defaults import DEFAULT_ENTRIES

BEFORE = [("battles", "0004_anonymous_battles")]


def _migrate(targets):
    MigrationExecutor(connection).migrate(targets)
    loader = MigrationExecutor(connection).loader
    return loader.project_state(list(loader.applied_migrations)).apps


@pytest.mark.django_db(transaction=True)
def test_a_verdict_from_before_keeps_its_outcome_and_the_defaults_are_offered():
    old = _migrate(BEFORE)
    try:
        user = old.get_model("auth", "User").objects.create(username="before-reasons")
        entries = old.get_model("catalogue", "ModelEntry").objects
        left, right = [entries.create(**entry, label=entry["slug"]) for entry in DEFAULT_ENTRIES[:2]]
        gens = old.get_model("generations", "Generation").objects
        battle = old.get_model("battles", "Battle").objects.create(
            owner=user, left=gens.create(owner=user, model=left, prompt="Hi"),
            right=gens.create(owner=user, model=right, prompt="Hi"), outcome="left")
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    kept = Battle.objects.get(id=battle.id)
    assert kept.outcome == "left" and kept.reasons == [] and kept.comment == ""
    assert ReasonTag.offered() == list(DEFAULT_REASONS)
