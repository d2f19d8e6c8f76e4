"""Fill `run_kind` and `run_id` (arena/generations/runs.py) for the generations made before them:
by origin first (web: playground, api: api, suite: suite_answer), then a human battle's sides
(its judge empty) are the "battle" run of that battle, and a suite run's answers and judgements
the "suite_answer" / "suite_judgement" runs of their suite run. An API generation made before
stays "api" whether it came from the JSON API, the OpenAI-compatible one or a probe: they were
stored alike, and a finished generation's kind changes nothing.

The suite tables are read by name (suites_suiteanswer, suites_suitejudgement keep their tables
whichever app holds their models), so this migration needs no model state of theirs."""

from collections import defaultdict

from django.db import migrations

BY_ORIGIN = {"web": "playground", "api": "api", "suite": "suite_answer"}
SUITE_TABLES = {"suite_answer": "suites_suiteanswer", "suite_judgement": "suites_suitejudgement"}


def fill(apps, schema_editor):
    Generation = apps.get_model("generations", "Generation")
    Battle = apps.get_model("battles", "Battle")
    for origin, kind in BY_ORIGIN.items():
        Generation.objects.filter(origin=origin).update(run_kind=kind, run_id=None)
    for battle_id, left_id, right_id in Battle.objects.filter(judge__isnull=True).values_list("id", "left_id",
                                                                                              "right_id"):
        Generation.objects.filter(id__in=[left_id, right_id]).update(run_kind="battle", run_id=battle_id)
    tables = set(schema_editor.connection.introspection.table_names())
    for kind, table in SUITE_TABLES.items():
        if table not in tables:
            continue
        by_run = defaultdict(list)
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(f"SELECT run_id, generation_id FROM {table}")
            for run_id, gen_id in cursor.fetchall():
                by_run[run_id].append(gen_id)
        for run_id, gen_ids in by_run.items():
            Generation.objects.filter(id__in=gen_ids).update(run_kind=kind, run_id=run_id)


class Migration(migrations.Migration):

    dependencies = [
        ("generations", "0008_generation_run"),
        ("battles", "0003_battle_judge_suite"),
        ("suites", "0002_suite_runs"),  # the suite runs' tables exist
    ]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
