"""ShareLink.suite_run now points at suite_runs.SuiteRun (the same table, suites_suiterun): state only."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('history', '0004_sharelink_digest'),
        ('suite_runs', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='sharelink',
                    name='suite_run',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE,
                                            related_name='share_links', to='suite_runs.suiterun'),
                ),
            ],
        ),
    ]
