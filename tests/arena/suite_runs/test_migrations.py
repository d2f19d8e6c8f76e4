"""The suite run models moved from the suites app to suite_runs by state-only migrations: the
tables keep their names, so a database migrated before the move keeps its runs, their rows and
the share links to them."""

import pytest
from django.apps import apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from arena.catalogue.defaults import DEFAULT_ENTRIES
from arena.history.models import ShareLink
from arena.suite_runs.models import SuiteAnswer, SuiteContestant, SuiteJudgement, SuiteRun

BEFORE_THE_MOVE = [("suites", "0002_suite_runs"), ("history", "0004_sharelink_digest")]


def _migrate(targets):
    """Migrate to `targets`; the models as the applied migrations leave them."""
    MigrationExecutor(connection).migrate(targets)
    loader = MigrationExecutor(connection).loader
    return loader.project_state(list(loader.applied_migrations)).apps


def _seed_before_the_move(old) -> str:
    """A run with a row in each of its tables and a share link, made with the models as they were."""
    user = old.get_model("auth", "User").objects.create(username="before")
    entries = old.get_model("catalogue", "ModelEntry").objects  # a historical model: no save() to derive a label
    left, right = [entries.create(**entry, label=entry["slug"]) for entry in DEFAULT_ENTRIES[:2]]
    suite = old.get_model("suites", "Suite").objects.create(owner=user, name="Colours")
    prompt = old.get_model("suites", "SuitePrompt").objects.create(suite=suite, position=1, prompt="Name a colour.")
    run = old.get_model("suites", "SuiteRun").objects.create(owner=user, suite=suite, judge=left)
    for position, model in enumerate((left, right), start=1):
        old.get_model("suites", "SuiteContestant").objects.create(run=run, model=model, position=position)
    gen = old.get_model("generations", "Generation").objects.create(owner=user, model=left, prompt="Name a colour.")
    old.get_model("suites", "SuiteAnswer").objects.create(run=run, prompt=prompt, contestant=left, generation=gen)
    old.get_model("suites", "SuiteJudgement").objects.create(run=run, prompt=prompt, left=left, right=right,
                                                             order="left_first", generation=gen)
    old.get_model("history", "ShareLink").objects.create(owner=user, suite_run=run, digest="d" * 64)
    return str(run.id)


@pytest.mark.django_db(transaction=True)
def test_a_run_made_before_the_move_keeps_its_rows_and_share_link():
    old = _migrate(BEFORE_THE_MOVE)
    try:
        run_id = _seed_before_the_move(old)
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    run = SuiteRun.objects.get()
    assert str(run.id) == run_id and run.suite.name == "Colours"
    assert SuiteContestant.objects.filter(run=run).count() == 2
    assert SuiteAnswer.objects.filter(run=run).count() == SuiteJudgement.objects.filter(run=run).count() == 1
    assert ShareLink.objects.get().suite_run == run
    assert apps.get_model("suite_runs", "SuiteRun")._meta.db_table == "suites_suiterun"
