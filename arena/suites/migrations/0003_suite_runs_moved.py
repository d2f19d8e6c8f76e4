"""The suite run models moved to the suite_runs app (its 0001 takes them, tables and rows as they
are): they leave this app's state only; no table is dropped."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
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
    ]
