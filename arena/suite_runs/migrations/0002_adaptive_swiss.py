# Adaptive and Swiss suite runs: an adaptive run's budget of judge calls and why it stopped.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('suite_runs', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='suiterun',
            name='budget',
            field=models.PositiveIntegerField(blank=True, help_text="Adaptive: judge calls at most (empty: half a round robin's).", null=True),
        ),
        migrations.AddField(
            model_name='suiterun',
            name='stop_reason',
            field=models.CharField(blank=True, default='', db_default='', choices=[('separated', 'every adjacent pair separated'), ('budget', 'budget spent'), ('exhausted', 'no prompt left for the pairs still unresolved')], help_text='Adaptive: why it stopped choosing pairs.', max_length=12),
        ),
        migrations.AlterField(
            model_name='suiterun',
            name='format',
            field=models.CharField(choices=[('round_robin', 'Round robin: every pair on every prompt'), ('knockout', 'Knockout: a bracket per prompt'), ('adaptive', 'Adaptive: the pairs the ranking is least sure of, within a budget of judge calls'), ('swiss', 'Swiss: rounds pairing similar scores (8 or more contestants)')], default='round_robin', max_length=12),
        ),
        migrations.AlterField(
            model_name='suiterun',
            name='seed',
            field=models.PositiveIntegerField(default=0, help_text="A knockout's coin for tied pairs, a Swiss run's prompts, an adaptive run's order of prompts."),
        ),
    ]
