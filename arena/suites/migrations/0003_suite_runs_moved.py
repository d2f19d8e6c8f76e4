"""The suite run models moved to the suite_runs app (its 0001 takes them, tables and rows as they
are): they leave this app's state only; no table is dropped. Their content types follow them, so
permissions granted on them (and anything else that names a content type) keep pointing at them."""

from django.db import migrations

MOVED = ["suiterun", "suitecontestant", "suiteanswer", "suitejudgement"]


def _relabel(old: str, new: str):
    def relabel(apps, schema_editor):
        content_types = apps.get_model("contenttypes", "ContentType")
        for model in MOVED:  # one the app already has (made after a migration back) is left as it is
            if not content_types.objects.filter(app_label=new, model=model).exists():
                content_types.objects.filter(app_label=old, model=model).update(app_label=new)
    return relabel


class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('suites', '0002_suite_runs'),
        ('suite_runs', '0001_initial'),
        ('history', '0005_sharelink_suite_run_moved'),  # no foreign key points at the old models any more
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name='SuiteAnswer'),
                migrations.DeleteModel(name='SuiteJudgement'),
                migrations.DeleteModel(name='SuiteContestant'),
                migrations.DeleteModel(name='SuiteRun'),
            ],
        ),
        migrations.RunPython(_relabel("suites", "suite_runs"), _relabel("suite_runs", "suites")),
    ]
